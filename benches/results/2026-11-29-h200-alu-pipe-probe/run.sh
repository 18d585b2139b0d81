#!/bin/bash
# The probe as it ran (Triton on the device machine; nothing of the library is built).
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.sm --format=csv,noheader
python3 .gpu-bundle/pipe_probe.py 2>&1 | grep -v -i warn | tee $OUT/pipe_probe.log
