"""OneFlow-Benchmark's models (v0.3.0) written as a OneFlow v0.3 user would write them for flowlab, at tiny sizes.

Each module has ``build(...)`` (defines the job functions) and ``main()`` (trains a few steps, prints losses); run
one with ``python -m examples.resnet50``. docs/models.md says what each follows and how it is checked.
"""
