#!/usr/bin/env bash
# run-in-vm.sh - run one command inside a throw-away QEMU guest that has a
# real (software) RDMA device, and exit with that command's exit status.
#
# The build machines have no RDMA in their kernel, so the RDMA tests run in a
# Debian kernel under QEMU with Soft-RoCE (rdma_rxe). The host's root file
# system is shared read-write into the guest over 9p, so the command sees the
# host's binaries, libraries and the build tree at the same paths (with
# cache=loose by default: see RMP_VM_9P_CACHE below). See
# SOFTROCE-VM.md in the project's shared docs for why things are done this way.
#
# Guest layout: 2 vCPUs on 2 NUMA nodes (cpu0/node0, cpu1/node1); 2 MiB
# hugepages reserved on both nodes; two virtio-net NICs, each behind a PCIe
# expander bridge of its own and on a hub of its own with no other port
# (nothing leaves the guest), each with an rxe device:
#   eth0  NUMA node 1  192.0.2.N/24     MAC 52:54:00:12:34:NN  rxe0
#   eth1  NUMA node 0  198.51.100.N/24  MAC 52:54:00:12:35:NN  rxe1
# N is the last octet of --addr (1 by default), NN the same in hex. The
# kernel names the NICs in the order it finds their bridges; /init fails if
# eth0 does not have eth0's MAC (it never swaps the names). Facts about two
# rxe devices in one guest: docs/testing.md.
#
# Two guests can be linked into a two-host bed (tests/vm/pair.sh does it):
# --link gives eth0 a UDP tunnel to another guest's QEMU on 127.0.0.1 (still
# nothing leaves this machine; eth1 stays on its own hub), --addr its own
# address (and eth1's 198.51.100.N), --spool a host
# directory the guest sees uncached at /run/rmp-spool (the guest agent reads
# commands there), --pidfile QEMU's pid (SIGKILL it: a dead host).
#
# The command gets: the caller's cwd, PATH, HOME, USER, locale, TERM, CI,
# sanitizer/malloc options, every RMP_*, MESON_*, RDMAV_* and IBV_* variable
# (plus any --env NAME), and RMP_TEST_ADDR, RMP_TEST_DEV (eth0's address and
# rxe0), RMP_TEST_ADDR2, RMP_TEST_DEV2 (eth1's address and rxe1), RMP_IN_VM=1.
#
# Environment knobs:
#   RMP_VM_HUGEPAGES   2 MiB hugepages to reserve per NUMA node (default 64)
#   RMP_VM_ACCEL       auto (default) | kvm | tcg
#   RMP_VM_KEEP_LOGS   serial logs to keep in <build-dir>/vm-logs (default 10)
#   RMP_VM_APPEND      extra kernel command line (e.g. loglevel=7 to debug boot)
#   RMP_VM_CPU         QEMU -cpu model under TCG (default max,la57=off)
#   RMP_VM_9P_CACHE    9p cache mode for the host root: loose (default) | none
#   RMP_VM_DEBUG       1: the guest prints its setup stages with timestamps
#
# Exit status: the guest command's, or 124 on timeout, or 125 when the guest
# failed to set up or died without reporting a status (stderr says which).

set -euo pipefail

readonly PROG=run-in-vm
SCRIPT_PATH=$(readlink -f -- "${BASH_SOURCE[0]}")
readonly SCRIPT_PATH

# Guest network / RDMA facts, shared by /init and the command's environment.
# NIC 1 (eth0) is on NUMA node 1, NIC 2 (eth1) on node 0; addresses and MACs
# end in the same N (set_guest_addr).
readonly GUEST_PREFIX=24 GUEST_NETDEV=eth0 GUEST_RDMA_DEV=rxe0
readonly GUEST_NETDEV2=eth1 GUEST_RDMA_DEV2=rxe1 GUEST_NET2=198.51.100
GUEST_ADDR=192.0.2.1

# Kernel modules the guest needs, in the order they are asked for.
# Optional ones may fail to load (no PCLMUL on the vCPU, no netem) without
# failing the run; required ones must either load or be built in. nbd and
# ext4: the block device test (test-nbd.sh fails without them).
readonly REQUIRED_MODULES=(9p 9pnet_virtio virtio_pci virtio_net veth rdma_rxe
                           ib_uverbs rdma_ucm crc32_generic)
readonly OPTIONAL_MODULES=(sch_netem crc32-pclmul nbd ext4)

# Debian packages this script (host side) or the guest command's RDMA
# userspace needs. The guest runs the host's own binaries.
readonly NEEDED_PACKAGES=(qemu-system-x86 busybox-static cpio kmod xz-utils zstd
                          iproute2 rdma-core ibverbs-providers ibverbs-utils
                          rdmacm-utils perftest numactl)

# Variables passed through to the guest command (bash glob patterns).
readonly PASS_ENV_PATTERNS=(PATH HOME USER LOGNAME LANG LANGUAGE 'LC_*' TZ TERM
                            CI LD_LIBRARY_PATH '*SAN_OPTIONS' MALLOC_PERTURB_
                            MALLOC_CHECK_ 'RMP_*' 'MESON_*' 'RDMAV_*' 'IBV_*')

usage() {
    cat <<EOF
Usage: tests/vm/run-in-vm.sh [OPTIONS] -- COMMAND [ARGS...]

Run COMMAND inside a QEMU guest with Soft-RoCE (rxe0 on eth0, 192.0.2.1,
NUMA node 1; rxe1 on eth1, 198.51.100.1, NUMA node 0) and exit with its
exit status (124: timeout, 125: guest setup failed or the guest died
without reporting a status).

Options:
  --build-dir DIR     meson build dir; the kernel/initramfs cache goes to
                      DIR/vm-cache, serial logs to DIR/vm-logs
                      (default: \$MESON_BUILD_ROOT or ./build)
  --timeout SECONDS   kill the VM after this many seconds, boot included
                      (default: 900)
  --mem MiB           guest memory, split over the two NUMA nodes
                      (default: 2048)
  --env NAME[=VALUE]  also pass NAME (or set it to VALUE) in the guest;
                      may be repeated
  --addr ADDR         eth0's address, 192.0.2.N (default 192.0.2.1); eth1
                      gets 198.51.100.N; both MAC addresses end in N
  --link LPORT:RPORT  connect eth0 to another guest: Ethernet frames go
                      over UDP from 127.0.0.1:LPORT to 127.0.0.1:RPORT
                      (default: a hub with no other port; eth1 is always
                      on a hub of its own)
  --spool DIR         share host DIR uncached at /run/rmp-spool
  --pidfile FILE      write QEMU's pid to FILE
  --name NAME         the guest's host name (default rmp-vm)
  -h, --help          show this help

Environment:
  RMP_VM_HUGEPAGES    2 MiB hugepages reserved per NUMA node (default 64)
  RMP_VM_ACCEL        auto (default: KVM if it works, else TCG) | kvm | tcg
  RMP_VM_KEEP_LOGS    serial logs kept in DIR/vm-logs (default 10)
  RMP_VM_APPEND       extra kernel command line (e.g. loglevel=7)
  RMP_VM_DEBUG        1: the guest prints its setup stages with timestamps
  RMP_VM_CPU          QEMU -cpu model under TCG (default max,la57=off)
  RMP_VM_9P_CACHE     9p cache mode of the host root: loose (default; exec
                      and file reads 2-5x faster under TCG, but host-side
                      changes made during the run may not be seen) | none

The command runs as root in the guest, in the caller's current directory,
with stdin from /dev/null and its output on the serial console, which is
streamed to stdout and kept in DIR/vm-logs. It gets PATH, HOME, locale,
TERM, CI, sanitizer options and all RMP_*, MESON_*, RDMAV_*, IBV_* variables,
plus RMP_TEST_ADDR (--addr) RMP_TEST_DEV=${GUEST_RDMA_DEV}, RMP_TEST_ADDR2
(${GUEST_NET2}.N) RMP_TEST_DEV2=${GUEST_RDMA_DEV2}, and RMP_IN_VM=1.

Example:
  tests/vm/run-in-vm.sh -- sh -c 'ibv_devices; rdma link; env | grep RMP_TEST'
EOF
}

log()  { printf '%s: %s\n' "$PROG" "$*" >&2; }
die()  { log "error: $*"; exit 125; }

# Run as root: apt-get needs it; we may already be root.
as_root() {
    if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

# Quote a string for POSIX sh (the guest runs the host's /bin/sh = dash,
# which does not understand bash's $'...' that printf %q may produce).
sh_quote() {
    local s=${1//\'/\'\\\'\'}
    printf "'%s'" "$s"
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# ---------------------------------------------------------------- arguments

BUILD_DIR=${MESON_BUILD_ROOT:-./build}
TIMEOUT=900
MEM_MB=2048
EXTRA_ENV=()
CMD=()
LINK=
SPOOL=
PIDFILE=
GUEST_NAME=rmp-vm

# Sets what follows from GUEST_ADDR (192.0.2.N): eth1's address and both MACs.
set_guest_addr() {
    local n=${GUEST_ADDR##*.}
    GUEST_ADDR2=$GUEST_NET2.$n
    GUEST_MAC=52:54:00:12:34:$(printf %02x "$n")
    GUEST_MAC2=52:54:00:12:35:$(printf %02x "$n")
}

parse_args() {
    while [[ $# -gt 0 ]]; do
        case $1 in
            --build-dir) [[ $# -ge 2 ]] || die "--build-dir needs a value"; BUILD_DIR=$2; shift 2 ;;
            --build-dir=*) BUILD_DIR=${1#*=}; shift ;;
            --timeout) [[ $# -ge 2 ]] || die "--timeout needs a value"; TIMEOUT=$2; shift 2 ;;
            --timeout=*) TIMEOUT=${1#*=}; shift ;;
            --mem) [[ $# -ge 2 ]] || die "--mem needs a value"; MEM_MB=$2; shift 2 ;;
            --mem=*) MEM_MB=${1#*=}; shift ;;
            --env) [[ $# -ge 2 ]] || die "--env needs a value"; EXTRA_ENV+=("$2"); shift 2 ;;
            --env=*) EXTRA_ENV+=("${1#*=}"); shift ;;
            --addr) [[ $# -ge 2 ]] || die "--addr needs a value"; GUEST_ADDR=$2; shift 2 ;;
            --link) [[ $# -ge 2 ]] || die "--link needs a value"; LINK=$2; shift 2 ;;
            --spool) [[ $# -ge 2 ]] || die "--spool needs a value"; SPOOL=$2; shift 2 ;;
            --pidfile) [[ $# -ge 2 ]] || die "--pidfile needs a value"; PIDFILE=$2; shift 2 ;;
            --name) [[ $# -ge 2 ]] || die "--name needs a value"; GUEST_NAME=$2; shift 2 ;;
            -h|--help) usage; exit 0 ;;
            --) shift; CMD=("$@"); break ;;
            *) log "unknown argument: $1"; usage >&2; exit 2 ;;
        esac
    done
    [[ ${#CMD[@]} -gt 0 ]] || { log "no command given (missing '-- COMMAND')"; usage >&2; exit 2; }
    [[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive integer (seconds)"
    # Each NUMA node gets half; keep node sizes a multiple of 8 MiB.
    [[ $MEM_MB =~ ^[1-9][0-9]*$ && $MEM_MB -ge 512 && $((MEM_MB % 16)) -eq 0 ]] \
        || die "--mem must be a multiple of 16, at least 512 (MiB)"
    HUGEPAGES=${RMP_VM_HUGEPAGES:-64}
    [[ $HUGEPAGES =~ ^[0-9]+$ ]] || die "RMP_VM_HUGEPAGES must be a non-negative integer"
    # Catch the impossible here; the guest checks what it really got (the
    # kernel and the command need some of each node too).
    (( HUGEPAGES * 2 < MEM_MB / 2 )) \
        || die "RMP_VM_HUGEPAGES=$HUGEPAGES per node does not fit in --mem $MEM_MB (half per node)"
    [[ $GUEST_ADDR =~ ^192\.0\.2\.([1-9][0-9]?|1[0-9][0-9]|2[0-4][0-9]|25[0-4])$ ]] \
        || die "--addr must be 192.0.2.N with N in 1..254"
    set_guest_addr
    [[ -z $LINK || $LINK =~ ^[1-9][0-9]{3,4}:[1-9][0-9]{3,4}$ ]] \
        || die "--link must be LPORT:RPORT (ports 1000..65535)"
    [[ -z $SPOOL || -d $SPOOL ]] || die "--spool $SPOOL is not a directory"
    [[ $GUEST_NAME =~ ^[a-z][a-z0-9-]{0,30}$ ]] || die "bad --name $GUEST_NAME"
    local e
    for e in "${EXTRA_ENV[@]}"; do
        [[ ${e%%=*} =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "bad --env name: ${e%%=*}"
    done
    ACCEL=${RMP_VM_ACCEL:-auto}
    [[ $ACCEL =~ ^(auto|kvm|tcg)$ ]] || die "RMP_VM_ACCEL must be auto, kvm or tcg"
    P9_CACHE=${RMP_VM_9P_CACHE:-loose}
    [[ $P9_CACHE =~ ^(loose|none|mmap)$ ]] || die "RMP_VM_9P_CACHE must be loose, none or mmap"
    KEEP_LOGS=${RMP_VM_KEEP_LOGS:-10}
    [[ $KEEP_LOGS =~ ^[1-9][0-9]*$ ]] || die "RMP_VM_KEEP_LOGS must be a positive integer"
}

# ------------------------------------------------------------ host packages

APT_UPDATED=0
apt_update_once() {
    [[ $APT_UPDATED -eq 1 ]] && return 0
    log "apt-get update"
    as_root apt-get -o DPkg::Lock::Timeout=300 update -qq >&2 \
        || log "warning: apt-get update failed"
    APT_UPDATED=1
}

ensure_packages() {
    local installed missing=() p
    installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' \
                "${NEEDED_PACKAGES[@]}" 2>/dev/null || true)
    for p in "${NEEDED_PACKAGES[@]}"; do
        grep -qx "$p installed" <<<"$installed" || missing+=("$p")
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    log "installing missing packages: ${missing[*]}"
    apt_update_once
    as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
        "${missing[@]}" >&2
}

# ------------------------------------------------------------------- kernel

# Identifies the state of apt's package lists and configuration: while it is
# unchanged, so is the answer of apt-cache (which takes seconds to ask).
apt_fingerprint() {
    { find /var/lib/apt/lists -maxdepth 1 -type f -printf '%f %T@ %s\n'
      find /etc/apt -type f -printf '%p %T@ %s\n'
    } 2>/dev/null | LC_ALL=C sort | sha256sum | cut -c1-32
}

# Sets KPKG and KPKG_VER to the kernel package linux-image-amd64 depends on
# today (never a pinned version). Returns 1 if apt cannot tell.
resolve_kernel_pkg() {
    local fp mfp memo=$CACHE/kernel-resolved
    fp=$(apt_fingerprint)
    if [[ -r $memo ]] && read -r mfp KPKG KPKG_VER <"$memo" && [[ $mfp == "$fp" && -n $KPKG_VER ]]; then
        return 0
    fi
    KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null \
           | awk '$1 ~ /Depends:$/ && $2 ~ /^linux-image-[0-9]/ { print $2; exit }') || true
    [[ -n $KPKG ]] || return 1
    KPKG_VER=$(apt-cache show --no-all-versions "$KPKG" 2>/dev/null \
               | awk '/^Version:/ { print $2; exit }') || true
    [[ -n $KPKG_VER ]] || return 1
    printf '%s %s %s\n' "$fp" "$KPKG" "$KPKG_VER" >"$memo"
}

# Downloads and unpacks KPKG=KPKG_VER into KDIR (atomically: a half-done
# extraction never looks complete).
fetch_kernel() {
    local tmp deb
    log "fetching kernel $KPKG $KPKG_VER"
    tmp=$(mktemp -d "$CACHE/.kernel-tmp.XXXXXX")
    # The sandbox user _apt may not be able to write into the cache dir.
    if ! (cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "$KPKG=$KPKG_VER" >&2); then
        rm -rf "$tmp"
        return 1
    fi
    deb=$(find "$tmp" -maxdepth 1 -name '*.deb' | head -n1)
    mkdir "$tmp/root"
    dpkg-deb -x "$deb" "$tmp/root"
    touch "$tmp/root/.complete"
    rm -rf "$KDIR"
    mv "$tmp/root" "$KDIR"
    rm -rf "$tmp"
    # Older kernels and their initramfs are not needed any more (a VM that
    # is running already has its copy in memory).
    find "$CACHE" -maxdepth 1 \( -name 'kernel-linux-image-*' -o -name 'initramfs-*' \) \
        ! -path "$KDIR" -exec rm -rf {} + || true
}

# Reads an unsigned little-endian integer of $3 bytes at offset $2 of file $1.
read_le() { od -An -tu"$3" -j "$2" -N "$3" -- "$1" | tr -d ' '; }

# Unpacks the ELF vmlinux from the bzImage $1 into $2, for QEMU's PVH boot:
# under TCG, the decompressor in the bzImage takes seconds per boot.
extract_vmlinux() {
    local bz=$1 out=$2 sects off len start magic tmp
    sects=$(read_le "$bz" $((0x1f1)) 1); [[ $sects -eq 0 ]] && sects=4
    off=$(read_le "$bz" $((0x248)) 4)     # setup header: payload_offset
    len=$(read_le "$bz" $((0x24c)) 4)     # and payload_length
    start=$(( (sects + 1) * 512 + off ))
    magic=$(od -An -tx1 -j "$start" -N 4 -- "$bz" | tr -d ' ')
    tmp=$out.tmp.$$
    # The payload ends with the 4-byte uncompressed size, which the
    # decompressors see as trailing garbage: judge by the result instead.
    tail -c +"$((start + 1))" -- "$bz" | head -c "$len" | case $magic in
        fd377a58) xz -dcq --single-stream ;;
        28b52ffd) zstd -dcq ;;
        1f8b*)    gzip -dcq ;;
        *)        cat >/dev/null; false ;;
    esac >"$tmp" 2>/dev/null || true
    if [[ $(od -An -tx1 -N 4 -- "$tmp" 2>/dev/null | tr -d ' ') == 7f454c46 ]]; then
        mv "$tmp" "$out"
    else
        rm -f "$tmp"
        return 1
    fi
}

kdir_for() { KDIR=$CACHE/kernel-${KPKG}_${KPKG_VER//[^A-Za-z0-9.+-]/_}; }

# Sets KDIR (unpacked package), KVER (its lib/modules name), KERNEL (vmlinuz).
prepare_kernel() {
    if ! resolve_kernel_pkg; then
        apt_update_once
        resolve_kernel_pkg || KPKG=
    fi
    if [[ -z $KPKG ]]; then
        # Offline without package lists: use the newest kernel we have.
        KDIR=$(find "$CACHE" -maxdepth 2 -name .complete -path '*/kernel-linux-image-*' \
               -printf '%T@ %h\n' | sort -rn | head -n1 | cut -d' ' -f2-)
        [[ -n $KDIR ]] || die "cannot resolve linux-image-amd64 (apt-cache depends) and no cached kernel"
        log "warning: cannot resolve linux-image-amd64, using cached ${KDIR##*/}"
    else
        kdir_for
        if [[ ! -e $KDIR/.complete ]] && ! fetch_kernel; then
            # Stale package lists may name a .deb the archive no longer has.
            apt_update_once
            resolve_kernel_pkg || die "cannot resolve linux-image-amd64 after apt-get update"
            kdir_for
            [[ -e $KDIR/.complete ]] || fetch_kernel || die "apt-get download $KPKG=$KPKG_VER failed"
        fi
    fi
    KVER=$(find "$KDIR/lib/modules" -mindepth 1 -maxdepth 1 -printf '%f\n' | head -n1)
    [[ -n $KVER ]] || die "no lib/modules/<version> in $KDIR"
    KERNEL=$KDIR/boot/vmlinuz-$KVER
    [[ -r $KERNEL ]] || die "no kernel image $KERNEL"
    # Prefer the uncompressed ELF kernel (PVH entry point) when the kernel
    # has one; the bzImage is the fallback.
    if grep -qx 'CONFIG_PVH=y' "$KDIR/boot/config-$KVER" 2>/dev/null; then
        if [[ -s $KDIR/vmlinux.pvh ]] || extract_vmlinux "$KERNEL" "$KDIR/vmlinux.pvh"; then
            KERNEL=$KDIR/vmlinux.pvh
        else
            log "note: cannot unpack vmlinux from $KERNEL; booting the bzImage"
        fi
    fi
}

# ---------------------------------------------------------------- initramfs

# The guest's /init (busybox ash). Per-run settings come from /rmp/run.conf
# and the command from /rmp/run.sh, both in a small per-run cpio appended to
# the cached initramfs (the kernel unpacks concatenated archives in order).
write_init() {
    cat >"$1" <<'INIT_EOF'
#!/bin/sh
# /init of tests/vm/run-in-vm.sh (generated, busybox ash).
PATH=/bin
export PATH
. /rmp/run.conf

NEWROOT=/newroot

say()  { echo "run-in-vm(guest): $*"; }
# Progress with guest uptime, only with RMP_VM_DEBUG=1.
stage() { [ "$DEBUG" = 1 ] && say "$(cut -d' ' -f1 /proc/uptime)s: $*"; return 0; }
halt_now() {
    sync
    poweroff -f
    echo o >/proc/sysrq-trigger
    sleep 600
}
# The host turns this marker into exit status 125 and an error message.
fail() {
    echo "RMP_VM_SETUP_FAILED id=$RUN_ID: $*"
    halt_now
}
# Run a host binary inside the shared root (rdma, ...).
inroot() { PATH=/usr/sbin:/usr/bin:/sbin:/bin /bin/chroot "$NEWROOT" "$@"; }

mount -t proc proc /proc || fail "mount /proc"
mount -t sysfs sysfs /sys || fail "mount /sys"
mount -t devtmpfs devtmpfs /dev || fail "mount /dev"
exec </dev/console >/dev/console 2>&1
# The tty would turn \n into \r\n; the host wants plain lines.
stty -onlcr 2>/dev/null

stage "init started"
# Modules, in depmod order; /rmp/modules lines are "req|opt PATH".
while read -r kind path; do
    [ -n "$path" ] || continue
    if ! out=$(insmod "$path" 2>&1); then
        case "$out" in *"File exists"*) continue ;; esac
        if [ "$kind" = opt ]; then
            say "note: optional module ${path##*/} not loaded: $out"
        else
            fail "cannot load module $path: $out"
        fi
    fi
done </rmp/modules

stage "modules loaded"
# Host root over 9p. virtio probing is synchronous, but retry briefly anyway.
mkdir -p "$NEWROOT"
i=0
until mount -t 9p -o "trans=virtio,version=9p2000.L,msize=524288,cache=$P9_CACHE" hostroot "$NEWROOT" 2>/tmp/err; do
    i=$((i + 1))
    [ $i -lt 50 ] || fail "cannot mount host root over 9p: $(cat /tmp/err)"
    usleep 100000
done

# With cache=loose, writes to the host are write-back: flush them within
# about a second, so that even a guest killed on timeout leaves its logs.
echo 100 >/proc/sys/vm/dirty_writeback_centisecs
echo 100 >/proc/sys/vm/dirty_expire_centisecs

for d in proc sys dev; do
    mount --bind "/$d" "$NEWROOT/$d" || fail "bind /$d"
done
mkdir -p /dev/pts /dev/shm /dev/hugepages
# devtmpfs has no /dev/fd & co.; bash process substitution needs them.
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts "$NEWROOT/dev/pts" || fail "mount /dev/pts"
mount -t tmpfs -o mode=1777 tmpfs "$NEWROOT/dev/shm" || fail "mount /dev/shm"
mount -t hugetlbfs -o mode=1777 hugetlbfs "$NEWROOT/dev/hugepages" || fail "mount /dev/hugepages"
mount -t tmpfs -o mode=755 tmpfs "$NEWROOT/run" || fail "mount /run"
mount -t tmpfs -o mode=1777 tmpfs "$NEWROOT/tmp" || fail "mount /tmp"
hostname "$GUEST_NAME"
if [ "$SPOOL" = 1 ]; then
    # Uncached: the host and the guest agent both write here during the run.
    mkdir -p "$NEWROOT/run/rmp-spool"
    mount -t 9p -o trans=virtio,version=9p2000.L,cache=none spool "$NEWROOT/run/rmp-spool" \
        || fail "cannot mount the spool"
fi

stage "file systems mounted"
# Network: the two isolated virtio NICs and lo.
ip link set lo up || fail "lo up"
# The kernel names NICs in the order it finds them; the host placed them so
# that eth0 is NIC 1 (node 1). Never swap names behind the tests' back: a
# mismatch is a harness bug.
net_up() {  # NAME MAC ADDR
    i=0
    while [ ! -e "/sys/class/net/$1" ]; do
        i=$((i + 1))
        [ $i -lt 100 ] || fail "no $1 (have: $(ls /sys/class/net | tr '\n' ' '))"
        usleep 100000
    done
    read -r mac <"/sys/class/net/$1/address"
    [ "$mac" = "$2" ] || fail "$1 has MAC $mac, expected $2: the NICs were enumerated in another order"
    ip addr add "$3/$PREFIX" dev "$1" || fail "address on $1"
    ip link set "$1" up || fail "$1 up"
}
net_up "$NETDEV" "$MAC" "$ADDR"
net_up "$NETDEV2" "$MAC2" "$ADDR2"

stage "network up"
# Hugepages on every node; verify the kernel really reserved them.
for n in /sys/devices/system/node/node[0-9]*; do
    f=$n/hugepages/hugepages-2048kB/nr_hugepages
    echo "$HUGEPAGES" >"$f" || fail "cannot write $f"
    got=$(cat "$f")
    [ "$got" -ge "$HUGEPAGES" ] || fail "${n##*/}: only $got of $HUGEPAGES hugepages"
done

stage "hugepages reserved"
# An rxe device per NIC; clients and servers of a device all use its address
# (rxe loops back). One rdma process for both: each exec over 9p costs.
out=$(printf '%s\n' "link add $RDMA_DEV type rxe netdev $NETDEV" \
          "link add $RDMA_DEV2 type rxe netdev $NETDEV2" | inroot rdma -b - 2>&1) \
    || fail "rdma link add $RDMA_DEV, $RDMA_DEV2: $out"
stage "rdma links added"
# Same state as `rdma link` shows, read from sysfs: no exec over 9p per poll.
for dev in "$RDMA_DEV" "$RDMA_DEV2"; do
    i=0
    until grep -q ACTIVE "/sys/class/infiniband/$dev/ports/1/state" 2>/dev/null; do
        i=$((i + 1))
        [ $i -lt 300 ] || fail "$dev not ACTIVE: $(inroot rdma link 2>&1)"
        usleep 100000
    done
done

mkdir -p "$NEWROOT/run/rmp-vm"
cp /rmp/run.sh "$NEWROOT/run/rmp-vm/run.sh"
ulimit -l unlimited || fail "ulimit -l unlimited"
read -r boot_up _ </proc/uptime
stage "$RDMA_DEV and $RDMA_DEV2 active, running the command"

# The command gets only the environment run.sh sets up.
env -i /bin/chroot "$NEWROOT" /bin/sh /run/rmp-vm/run.sh </dev/null
rc=$?

read -r end_up _ </proc/uptime
sync
echo "RMP_VM_EXIT=$rc id=$RUN_ID boot=$boot_up end=$end_up"
halt_now
INIT_EOF
    chmod 755 "$1"
}

# Writes "req|opt PATH" lines (load order) to $1 and copies the modules,
# decompressed, under $2 (the initramfs staging root).
collect_modules() {
    local list=$1 root=$2 conf mod kind out word path rel dst
    local -A seen=()
    conf=$(mktemp -d)   # empty config dir: ignore the host's modprobe.d
    depmod -b "$KDIR" "$KVER"
    : >"$list"
    for mod in "${REQUIRED_MODULES[@]}" "${OPTIONAL_MODULES[@]}"; do
        kind=req
        [[ " ${OPTIONAL_MODULES[*]} " == *" $mod "* ]] && kind=opt
        if ! out=$(modprobe -C "$conf" -d "$KDIR" -S "$KVER" --show-depends "$mod" 2>&1); then
            [[ $kind == opt ]] && { log "note: optional module $mod not in kernel $KVER"; continue; }
            rmdir "$conf"; die "module $mod not found in kernel $KVER: $out"
        fi
        while read -r word path _; do
            case $word in
                builtin) continue ;;            # e.g. virtio_pci on 6.12
                insmod) ;;
                *) rmdir "$conf"; die "unexpected modprobe output for $mod: $word $path" ;;
            esac
            [[ -n ${seen[$path]:-} ]] && continue
            seen[$path]=1
            rel=${path#"$KDIR"/}
            rel=${rel%.xz}; rel=${rel%.zst}
            dst=$root/$rel
            mkdir -p "${dst%/*}"
            case $path in
                *.ko.xz)  xz -dc -- "$path" >"$dst" ;;
                *.ko.zst) zstd -dcq -- "$path" >"$dst" ;;
                *.ko)     cp -- "$path" "$dst" ;;
                *) rmdir "$conf"; die "unknown module file type: $path" ;;
            esac
            printf '%s /%s\n' "$kind" "$rel" >>"$list"
        done <<<"$out"
    done
    rmdir "$conf"
}

# Sets INITRAMFS. Rebuilt when the kernel or this script changes.
prepare_initramfs() {
    local stamp stage a
    stamp="$(basename "$KDIR") $(sha256sum "$SCRIPT_PATH" | cut -d' ' -f1)"
    INITRAMFS=$CACHE/initramfs-$KVER.cpio
    if [[ -r $INITRAMFS && -r $INITRAMFS.stamp && $(cat "$INITRAMFS.stamp") == "$stamp" ]]; then
        return 0
    fi
    log "building initramfs for $KVER"
    [[ $(ldd /bin/busybox 2>&1 || true) == *'not a dynamic executable'* ]] \
        || die "/bin/busybox is not static (install busybox-static)"
    stage=$(mktemp -d "$CACHE/.initramfs-tmp.XXXXXX")
    mkdir -p "$stage"/{bin,dev,proc,sys,tmp,rmp,newroot}
    cp /bin/busybox "$stage/bin/busybox"
    for a in $(/bin/busybox --list); do
        [[ $a == busybox ]] || ln -sf busybox "$stage/bin/$a"
    done
    write_init "$stage/init"
    collect_modules "$stage/rmp/modules" "$stage"
    (cd "$stage" && find . -mindepth 1 | LC_ALL=C sort \
        | cpio -o -H newc -R 0:0 --quiet) >"$INITRAMFS.tmp"
    mv "$INITRAMFS.tmp" "$INITRAMFS"
    printf '%s\n' "$stamp" >"$INITRAMFS.stamp"
    rm -rf "$stage"
}

# -------------------------------------------------------------- per run

# Writes the command script: caller's environment subset, guest facts, cwd.
write_run_script() {
    local out=$1 name cwd e
    local -A names=()
    for name in $(compgen -e); do
        for e in "${PASS_ENV_PATTERNS[@]}"; do
            # shellcheck disable=SC2053 # pattern match is intended
            [[ $name == $e ]] && { names[$name]=1; break; }
        done
    done
    cwd=$(pwd -P)
    {
        echo "# generated by tests/vm/run-in-vm.sh"
        for name in $(printf '%s\n' "${!names[@]}" | LC_ALL=C sort); do
            [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
            printf 'export %s=%s\n' "$name" "$(sh_quote "${!name}")"
        done
        for e in "${EXTRA_ENV[@]}"; do      # names checked in parse_args
            if [[ $e == *=* ]]; then
                printf 'export %s=%s\n' "${e%%=*}" "$(sh_quote "${e#*=}")"
            elif [[ -v $e ]]; then
                printf 'export %s=%s\n' "$e" "$(sh_quote "${!e}")"
            fi
        done
        # The guest's facts win over anything the caller had set.
        printf 'export RMP_TEST_ADDR=%s RMP_TEST_DEV=%s\n' "$GUEST_ADDR" "$GUEST_RDMA_DEV"
        printf 'export RMP_TEST_ADDR2=%s RMP_TEST_DEV2=%s\n' "$GUEST_ADDR2" "$GUEST_RDMA_DEV2"
        printf 'export RMP_IN_VM=1\n'
        printf 'cd -- %s || exit 125\n' "$(sh_quote "$cwd")"
        printf 'exec'
        for e in "${CMD[@]}"; do printf ' %s' "$(sh_quote "$e")"; done
        printf '\n'
    } >"$out"
}

# The guest mounts tmpfs on these, so the host's copies are not visible there.
check_cwd_visible() {
    local cwd
    cwd=$(pwd -P)
    case $cwd/ in
        /tmp/*|/run/*|/proc/*|/sys/*|/dev/*)
            die "current directory $cwd is not visible in the guest (it has its own /tmp, /run, /dev); cd elsewhere" ;;
    esac
}

# Per-run initrd = cached initramfs + small cpio with run.conf and run.sh.
make_run_initrd() {
    local out=$1 stage
    stage=$(mktemp -d)
    mkdir -p "$stage/rmp"
    {
        printf 'RUN_ID=%s\n' "$RUN_ID"
        printf 'HUGEPAGES=%s\n' "$HUGEPAGES"
        printf 'P9_CACHE=%s\n' "$P9_CACHE"
        printf 'DEBUG=%s\n' "$([[ ${RMP_VM_DEBUG:-0} == 1 ]] && echo 1 || echo 0)"
        printf 'ADDR=%s\nPREFIX=%s\n' "$GUEST_ADDR" "$GUEST_PREFIX"
        printf 'NETDEV=%s\nRDMA_DEV=%s\nMAC=%s\n' "$GUEST_NETDEV" "$GUEST_RDMA_DEV" "$GUEST_MAC"
        printf 'ADDR2=%s\nNETDEV2=%s\nRDMA_DEV2=%s\nMAC2=%s\n' \
            "$GUEST_ADDR2" "$GUEST_NETDEV2" "$GUEST_RDMA_DEV2" "$GUEST_MAC2"
        printf 'GUEST_NAME=%s\nSPOOL=%s\n' "$GUEST_NAME" "$([[ -n $SPOOL ]] && echo 1 || echo 0)"
    } >"$stage/rmp/run.conf"
    write_run_script "$stage/rmp/run.sh"
    { cat "$INITRAMFS"
      (cd "$stage" && printf '%s\n' rmp rmp/run.conf rmp/run.sh \
           | cpio -o -H newc -R 0:0 --quiet)
    } >"$out"
    rm -rf "$stage"
}

# ---------------------------------------------------------- accelerator

# KVM only if the CPU advertises it, /dev/kvm is usable, and a kernel really
# starts under it: on these machines /dev/kvm exists and opens, but without
# vmx/svm a guest hangs without printing anything.
pick_accel() {
    local probe_log pid i ok=0
    # Under TCG: every feature QEMU can emulate (PCLMUL for crc32-pclmul,
    # AVX2, ...) but not 5-level paging, which only adds a level to every
    # emulated page walk.
    local TCG_CPU=${RMP_VM_CPU:-max,la57=off}
    case $ACCEL in
        kvm) ACCEL_ARGS=(-accel kvm -cpu host); ACCEL_NAME=kvm; return ;;
        tcg) ACCEL_ARGS=(-accel tcg -cpu "$TCG_CPU"); ACCEL_NAME=tcg; return ;;
    esac
    ACCEL_ARGS=(-accel tcg -cpu "$TCG_CPU"); ACCEL_NAME=tcg
    grep -qwE 'vmx|svm' /proc/cpuinfo || return 0
    [[ -r /dev/kvm && -w /dev/kvm ]] || return 0
    probe_log=$(mktemp)
    qemu-system-x86_64 -machine q35 -accel kvm -cpu host -m 256 -nodefaults \
        -no-user-config -display none -no-reboot -serial "file:$probe_log" \
        -kernel "$KERNEL" -append "console=ttyS0 panic=-1" </dev/null >/dev/null 2>&1 &
    pid=$!
    for ((i = 0; i < 100; i++)); do
        grep -q 'Linux version' "$probe_log" 2>/dev/null && { ok=1; break; }
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -f "$probe_log"
    if [[ $ok -eq 1 ]]; then
        ACCEL_ARGS=(-accel kvm -cpu host); ACCEL_NAME=kvm
    else
        log "note: KVM advertised but a guest does not start under it; using TCG"
    fi
}

# ------------------------------------------------------------------- main

VM_PID=        # timeout(1) running qemu: it passes our TERM on to qemu
RUN_INITRD=
# shellcheck disable=SC2317 # called from traps
cleanup() {
    if [[ -n $VM_PID ]] && kill -0 "$VM_PID" 2>/dev/null; then
        kill "$VM_PID" 2>/dev/null || true
        wait "$VM_PID" 2>/dev/null || true
    fi
    [[ -n $RUN_INITRD ]] && rm -f "$RUN_INITRD"
    return 0
}

# Leftovers of runs that were killed hard (SIGKILL skips our traps). Called
# with the cache lock held, so no other run is inside a *-tmp.* dir now.
prune_stale() {
    local f pid
    rm -rf "$CACHE"/.kernel-tmp.* "$CACHE"/.initramfs-tmp.* "$CACHE"/*.cpio.tmp \
        "$CACHE"/kernel-*/vmlinux.pvh.tmp.* 2>/dev/null || true
    for f in "$CACHE"/run-*.initrd; do
        [[ -e $f ]] || continue
        pid=${f##*/run-}; pid=${pid#*-}; pid=${pid%%-*}   # run-TIME-PID-RAND
        [[ $pid =~ ^[0-9]+$ && -d /proc/$pid ]] || rm -f -- "$f"
    done
}

# QEMU's option syntax: a comma inside a value is written as two.
qemu_escape() { printf '%s' "${1//,/,,}"; }

prune_logs() {
    find "$LOG_DIR" -maxdepth 1 -name '*.log' -printf '%T@ %p\n' | sort -rn \
        | tail -n +"$((KEEP_LOGS + 1))" | cut -d' ' -f2- \
        | while read -r f; do rm -f -- "$f"; done
    return 0
}

main() {
    parse_args "$@"
    check_cwd_visible
    mkdir -p "$BUILD_DIR"
    BUILD_DIR=$(cd "$BUILD_DIR" && pwd -P)
    CACHE=$BUILD_DIR/vm-cache
    LOG_DIR=$BUILD_DIR/vm-logs
    mkdir -p "$CACHE" "$LOG_DIR"

    ensure_packages

    # Concurrent runs share the cache: one of them prepares it at a time.
    local lockfd
    exec {lockfd}>"$CACHE/.lock"
    flock "$lockfd"
    prune_stale
    prepare_kernel
    prepare_initramfs
    exec {lockfd}>&-

    pick_accel

    RUN_ID="$(date +%s)-$$-$RANDOM"
    local stamp log
    stamp=$(date +%Y%m%d-%H%M%S)
    log=$LOG_DIR/$stamp-$$.log
    RUN_INITRD=$CACHE/run-$RUN_ID.initrd
    trap cleanup EXIT
    trap 'log "interrupted"; cleanup; exit 130' INT
    trap 'log "terminated"; cleanup; exit 143' TERM
    make_run_initrd "$RUN_INITRD"

    local m0=$((MEM_MB / 2)) m1=$((MEM_MB - MEM_MB / 2))
    # Under TCG the guest kernel finds no invariant TSC and times itself
    # with the HPET: every clock_gettime is then an emulated MMIO read in a
    # system call, 3.2 us against 0.17 us through the vDSO on the TSC (same
    # guest, 10^5 calls in a loop). Hosts that run rmpool read the TSC;
    # so does the guest here. TCG's TSC is the host's, which is invariant.
    # KVM guests keep kvm-clock.
    local clock=
    [[ $ACCEL_NAME == tcg ]] && clock=" clocksource=tsc tsc=reliable"
    # shellcheck disable=SC2054 # commas are QEMU's option syntax
    local qemu=(
        qemu-system-x86_64
        -machine q35 "${ACCEL_ARGS[@]}"
        -nodefaults -no-user-config -display none -no-reboot
        -smp 2 -m "${MEM_MB}M"
        -object "memory-backend-ram,id=m0,size=${m0}M"
        -object "memory-backend-ram,id=m1,size=${m1}M"
        -numa node,nodeid=0,cpus=0,memdev=m0
        -numa node,nodeid=1,cpus=1,memdev=m1
        -kernel "$KERNEL" -initrd "$RUN_INITRD"
        # mitigations=off: a throw-away test guest; they only cost time.
        # acpi=noirq: every PCI device here uses MSI or MSI-X, but enabling
        # one still routes its legacy interrupt through ACPI, and for a
        # device behind an expander bridge that took 0.15-0.4 s of AML
        # under TCG (root ports and NICs alike; 1-15 ms without).
        -append "quiet loglevel=3 console=ttyS0 panic=-1 mitigations=off acpi=noirq${clock}${RMP_VM_APPEND:+ $RMP_VM_APPEND}"
        # Serial console: streamed to our stdout live and kept in the log.
        -chardev "stdio,id=ser0,logfile=$(qemu_escape "$log")"
        -serial chardev:ser0
        # Host / over 9p; every PCI device but the NICs on pcie.0, or QEMU
        # would try to plug it into an expander bridge and refuse.
        -fsdev local,id=fs0,path=/,security_model=none,multidevs=remap
        -device virtio-9p-pci,fsdev=fs0,mount_tag=hostroot,bus=pcie.0
        # Each NIC sits behind a PCIe expander bridge of its own: NIC 1 on
        # NUMA node 1, NIC 2 on node 0. The guest finds (and names) them in
        # the order of QEMU's ACPI table, which lists expander bridges
        # newest first whatever their bus numbers (QEMU 7.2): NIC 1's bridge
        # comes last here, and has the lower bus number too, so that it is
        # eth0 either way.
        -nic none
        -device pxb-pcie,id=pxb2,bus_nr=192,bus=pcie.0,numa_node=0
        -device pcie-root-port,id=rp2,bus=pxb2,chassis=2
        -device pxb-pcie,id=pxb1,bus_nr=128,bus=pcie.0,numa_node=1
        -device pcie-root-port,id=rp1,bus=pxb1,chassis=1
        # NIC 2 is on a hub with no other port, always: nothing can leave.
        -netdev hubport,id=n2,hubid=1
        -device "virtio-net-pci,netdev=n2,bus=rp2,mac=$GUEST_MAC2"
    )
    if [[ -n $LINK ]]; then
        # A link to the other guest: frames in UDP datagrams over loopback.
        # Connectionless, so either guest may die and boot again.
        qemu+=(-netdev "socket,id=n1,udp=127.0.0.1:${LINK#*:},localaddr=127.0.0.1:${LINK%%:*}")
    else
        # Alone: a hub with no other port, nothing can leave the guest.
        qemu+=(-netdev hubport,id=n1,hubid=0)
    fi
    # Every guest has its own MACs: the default one is the same for all.
    qemu+=(-device "virtio-net-pci,netdev=n1,bus=rp1,mac=$GUEST_MAC")
    if [[ -n $SPOOL ]]; then
        qemu+=(-fsdev "local,id=fs1,path=$(qemu_escape "$(cd "$SPOOL" && pwd -P)"),security_model=none"
               -device virtio-9p-pci,fsdev=fs1,mount_tag=spool,bus=pcie.0)
    fi
    [[ -n $PIDFILE ]] && qemu+=(-pidfile "$PIDFILE")

    log "booting $KVER ($ACCEL_NAME, ${MEM_MB} MiB, timeout ${TIMEOUT}s), log: $log"
    local t0 t1 qrc=0
    t0=$(now)
    # timeout(1) sends TERM, then KILL if qemu does not go away.
    # A hub with a single port is the point here: drop QEMU's warning on it.
    timeout --kill-after=10 "$TIMEOUT" "${qemu[@]}" </dev/null \
        2> >(grep -v --line-buffered 'is not connected to host network' >&2) &
    VM_PID=$!
    wait "$VM_PID" || qrc=$?
    VM_PID=
    t1=$(now)

    local marker status boot end rc
    marker=$(tr -d '\r' <"$log" | grep -aoE "RMP_VM_EXIT=[0-9]+ id=$RUN_ID boot=[0-9.]+ end=[0-9.]+" | tail -n1) || true
    if [[ -n $marker ]]; then
        status=${marker#RMP_VM_EXIT=}; status=${status%% *}
        boot=${marker#* boot=}; boot=${boot%% *}
        end=${marker##* end=}
        rc=$status
        # boot/end are guest uptimes: firmware and kernel loading come on top.
        log "exit status $rc; boot + command took $(elapsed "$t0" "$t1") s wall ($ACCEL_NAME; guest uptime: ready at ${boot} s, command $(elapsed "$boot" "$end") s)"
    elif [[ $qrc -eq 124 || $qrc -eq 137 ]]; then
        rc=124
        log "error: timed out after ${TIMEOUT} s, VM killed; wall $(elapsed "$t0" "$t1") s; log: $log"
    elif marker=$(tr -d '\r' <"$log" | grep -a "RMP_VM_SETUP_FAILED id=$RUN_ID" | tail -n1); then
        rc=125
        log "error: guest setup failed: ${marker#*: }; wall $(elapsed "$t0" "$t1") s; log: $log"
    else
        rc=125
        log "error: guest died without reporting an exit status (qemu exit $qrc); wall $(elapsed "$t0" "$t1") s; log: $log"
    fi
    prune_logs
    return "$rc"
}

# On one line: bash reads scripts as it runs them, so an edit of this file
# while a run is in progress must not change what runs after main returns.
main "$@"; exit $?
