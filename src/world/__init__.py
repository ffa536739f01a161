"""The fictional biography world behind data/: places, names and sentence templates.

`src/make_world.py` is the entry point that puts these pieces together:

- `world.places`: the hand-written list of real city and country names, each with a region,
  and the Zipf-like popularity ranking that decides how often each is a birthplace;
- `world.names`: per-culture name pools and the weak name/region lean;
- `world.templates`: occupations, years and the sentence templates that write a biography.

Everything here is plain data plus functions that take an explicit `random.Random`, so a
world depends on its seed alone.
"""
