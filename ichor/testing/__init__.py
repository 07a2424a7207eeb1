"""Test support that bench and examples share with the tests: a real Hermes Agent on loopback
(``hermes_harness``, ``hermes_scenarios``, ``fault_scenarios``) and a tiny random model (``tiny_model``).

Nothing here is imported by the plugin itself; ``tiny_model`` needs the ``train`` extra, the harness the
``hermes`` extra.
"""
