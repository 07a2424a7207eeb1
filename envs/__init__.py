"""Environments for RL trainers built on ichor's pairs."""
