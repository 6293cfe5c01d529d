"""Independent-oracle property tests for netc (see tests/test_oracle_clingo.py).

Modules:
  model      -- AST of the Souffle subset we generate, its Souffle text form and a parser
  gen        -- Hypothesis strategies for random stratified programs + update scripts
  clingo_ref -- reference semantics via ASP (clingo)
  naive_ref  -- a second, independent reference: naive bottom-up evaluation in Python
  netc_cli   -- running the netc binary and parsing its outputs
  replay     -- writing/re-running reproducers
"""
