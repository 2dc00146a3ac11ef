"""Running suites: tests x targets x attempts, scored, into records of the common model.

    suite.py       the suite file (agentv's shape) and targets file, with line marks
    spec.py        what a suite is once read: tests, targets, assertions, policies
    targets.py     the three kinds of target (openai, python, command) and retries
    assertions.py  deterministic assertions and the weighted score of an attempt
    judge.py       the LLM judge behind ``llm-rubric``
    engine.py      scheduling: seeded order, concurrency, journal, resume, stopping

Nothing here prints or reads the environment: the command line passes both in.
"""
