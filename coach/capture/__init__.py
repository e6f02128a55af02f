"""Run programs under the profilers on a GPU machine and keep the raw reports with their provenance.

This package needs only the standard library (the programs it runs bring torch or cupy), so that
``PYTHONPATH=. python3 -m coach.capture record ...`` works on a GPU machine where nothing else is
installed. Reading the reports into coach's model happens elsewhere (``coach record --import``).

    tools      find nsys / ncu / nvcc and run programs (argument lists, timeouts, minimal environment)
    probe      what the machine has: GPU, driver, tool and package versions, commit
    doctor     the checks behind ``coach doctor``
    profile    one command under nsys and/or ncu (``coach profile``)
    record     the scenarios' programs, plain and profiled (``coach record``)
    harness    what scenario programs share: sizes, NVTX, CUDA-event timing, the result line
    staging    write an output folder completely or not at all
"""
