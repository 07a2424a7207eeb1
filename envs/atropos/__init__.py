"""IchorEnv, the Atropos environment: run ``python envs/atropos/ichor_env.py serve|process|evaluate``."""
