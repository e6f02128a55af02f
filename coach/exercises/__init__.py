"""The coaching part: practise the reasoning, not just read it.

``grading``   concept matching that tolerates wording (signals found minus red flags)
``bank``      the interview question bank and its concept library (``data/bank/*.toml``)
``quantity``  numbers with units as people type them
``drills``    estimation drills generated from the hardware tables, graded by tolerance
``rubric``    a scenario's rubric sentences turned into concepts
``player``    guided exercises: a scenario played as decision points
``answers``   where answers come from: a terminal, ``--answer`` or ``--answers FILE``
``progress``  attempts and scores in SQLite, safe with concurrent writers
``planner``   day-by-day study plans weighted by weak topics
``topics``    which quiz topic a scenario or ladder trains
"""
