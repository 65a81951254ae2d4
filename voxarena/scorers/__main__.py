"""``python -m voxarena.scorers --port N``

The scorer runs clips side by side (requests in flight, replicas) and each metric on one thread, so
numpy's and scipy's OpenBLAS get one thread too, set before they load (the user's own setting wins).
OpenBLAS's default, a thread per core, sped no metric up here and its idle threads spin: measured on
2 cores, one clip at a time, Whisper's decoding burned 6.2 CPU s for 5.0 s of wall time and DNSMOS 6.3
for 4.8, with one thread 4.7 and 4.3 (both) and STOI and SIM half the CPU in the same time; with two
clips at once the spinning took the other clip's core (benchmarks/scorer_throughput.py).
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from .server import main  # noqa: E402  (after the thread settings: OpenBLAS reads them when it loads)

if __name__ == "__main__":
    main()
