"""docs/service.md §4: a flock on a directory is released when its holder is SIGKILLed, and a second
open of the same directory cannot take it while the holder lives (even in the same process)."""
import fcntl
import os
import signal
import subprocess
import sys
import tempfile

HOLD = "import fcntl, os, sys, time\nfd = os.open(sys.argv[1], os.O_RDONLY)\nfcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(60)\n"


def try_lock(path: str) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


with tempfile.TemporaryDirectory() as d:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, d], stdout=subprocess.PIPE, text=True)
    holder.stdout.readline()
    print("lockable while the holder lives:", try_lock(d))
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    holder.stdout.close()
    print("lockable after SIGKILL of the holder:", try_lock(d))
    own = os.open(d, os.O_RDONLY)
    fcntl.flock(own, fcntl.LOCK_EX)
    print("lockable through a second open in the holding process:", try_lock(d))
    os.close(own)
