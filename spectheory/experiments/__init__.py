"""The scripted studies on the real model: measurements that use the library, not part of it.

Each study is a function (with a settings dataclass where it has options) and a
command of the command line, its one entry point:

- :mod:`.draft_scaling` (``spectheory experiment draft-scaling``): the three
  scaling laws of adapter drafts (capacity, training tokens, batch size;
  docs/theory.md §6.1, 6.2).
- :mod:`.draft_length` (``spectheory experiment draft-length``): cost ratios,
  the capacity law and the draft-length policies of SpecDec++ on held-out
  prompts (docs/theory.md §5.4, 5.5).
- :mod:`.trees` (``spectheory experiment trees``): block efficiency of every
  chain and tree method, and the orderings the papers claim (docs/theory.md §9).

The library packages (``exact``, ``solvers``, ``verifiers``, ``sim``,
``trees``, ``lm``, ``torch``, ``live``) import nothing from here; the top
layers (``papers``, ``report``, ``cli``) may.  Importing a study imports
numpy only: the model, torch and the kernels are imported when it runs.
"""
