"""The `cuda-int4-dequant-magic` skeleton: `skeleton.py` says what it is and when it applies, `example.py`
is its runnable before → after pair, `fixtures.*` the kernels it must and must not match."""
