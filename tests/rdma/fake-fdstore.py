#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fake-fdstore.py LOG -- CMD...: the part of systemd's service manager
that rmpoold's [pool] fdstore relies on, for a test without systemd.

Runs CMD with NOTIFY_SOCKET pointing at a datagram socket of ours, keeps
every fd that arrives with FDSTORE=1 under its FDNAME (as systemd does with
FileDescriptorStoreMax=), and on SIGUSR1 kills CMD with SIGKILL and starts
it again with the stored fds passed the way sd_listen_fds(3) expects
(fd 3.., LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES). SIGUSR2 does the same
after SIGTERM (a planned restart). FDSTOREREMOVE=1 drops the fd of its
FDNAME. Like systemd, an fd that refers to an open file already stored
(kcmp(2) KCMP_FILE: the same open file description, whatever its name)
is not stored again ("suppressing duplicate fd"). SIGHUP is SIGUSR2 with
every stored name that starts with
"rmpool-pool-" renamed to "rmpool-pool", the name an rmpoold of one device
stored its memfd under (an upgrade). SIGTERM ends CMD and us. What it saw
goes to LOG, one line per event."""
import array
import ctypes
import os
import signal
import socket
import sys
import tempfile
import time

log_path = sys.argv[1]
cmd = sys.argv[3:] if sys.argv[2] == "--" else sys.argv[2:]
log = open(log_path, "a", buffering=1)
tmp = tempfile.mkdtemp(prefix="fake-fdstore.")
sock_path = os.path.join(tmp, "notify")
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(sock_path)
store = {}  # name -> fd
child = None
pending = []
libc = ctypes.CDLL(None, use_errno=True)
SYS_kcmp, KCMP_FILE = 312, 0  # x86_64


def same_file(a, b):
    """a and b are the same open file description (systemd's same_fd)."""
    me = os.getpid()
    return libc.syscall(SYS_kcmp, me, me, KCMP_FILE, a, b) == 0


def start():
    global child
    names = list(store)
    fds = [store[n] for n in names]
    pid = os.fork()
    if pid == 0:
        env = dict(os.environ, NOTIFY_SOCKET=sock_path)
        if fds:
            # Move them to 3.. (first out of the way, then into place).
            tmpfds = [os.dup(f) for f in fds]
            for i, f in enumerate(tmpfds):
                os.dup2(f, 3 + i, inheritable=True)
            env.update(LISTEN_FDS=str(len(fds)), LISTEN_PID=str(os.getpid()),
                       LISTEN_FDNAMES=":".join(names))
        os.execvpe(cmd[0], cmd, env)
    child = pid
    log.write(f"started pid {pid} with {len(fds)} stored fd(s) {names}\n")


def on_signal(signum, frame):
    pending.append(signum)


for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP, signal.SIGTERM):
    signal.signal(s, on_signal)
sock.settimeout(0.1)
start()
while True:
    try:
        msg, anc, _, _ = sock.recvmsg(4096, socket.CMSG_SPACE(16 * 4))
    except (socket.timeout, InterruptedError):
        msg, anc = None, []
    if msg is not None:
        fields = dict(l.split("=", 1) for l in msg.decode().splitlines() if "=" in l)
        fds = []
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                a = array.array("i")
                a.frombytes(data[:len(data) - len(data) % a.itemsize])
                fds.extend(a)
        if fields.get("FDSTORE") == "1" and fds:
            name = fields.get("FDNAME", "stored")
            dup = [n for n, f in store.items() if same_file(f, fds[0])]
            if dup:
                os.close(fds[0])
                log.write(f"suppressing duplicate fd (stored as {dup[0]}),"
                          f" not stored as {name}\n")
            else:
                if name in store:
                    os.close(store[name])
                store[name] = fds[0]
                log.write(f"stored fd as {name}\n")
            for f in fds[1:]:
                os.close(f)
        elif fields.get("FDSTOREREMOVE") == "1":
            name = fields.get("FDNAME", "stored")
            if name in store:
                os.close(store.pop(name))
            log.write(f"removed fd {name}\n")
        elif "READY" in fields:
            log.write("READY=1\n")
    while pending:
        s = pending.pop(0)
        if s == signal.SIGTERM:
            os.kill(child, signal.SIGTERM)
            os.waitpid(child, 0)
            log.write("stopped\n")
            sys.exit(0)
        os.kill(child, signal.SIGKILL if s == signal.SIGUSR1 else signal.SIGTERM)
        os.waitpid(child, 0)
        if s == signal.SIGHUP:
            for n in [n for n in store if n.startswith("rmpool-pool-")]:
                store["rmpool-pool"] = store.pop(n)
                log.write(f"renamed {n} to rmpool-pool\n")
        log.write(f"restart after {'SIGKILL' if s == signal.SIGUSR1 else 'SIGTERM'}\n")
        start()
    # A child that died on its own is restarted, as Restart=on-failure.
    try:
        pid, status = os.waitpid(child, os.WNOHANG)
    except ChildProcessError:
        pid = 0
    if pid == child:
        log.write(f"exited with status {status}; restarting\n")
        time.sleep(0.5)
        start()
