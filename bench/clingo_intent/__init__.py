"""clingo as an independent reference on netc's standard intent rules (bench/clingo_intent.py)."""
