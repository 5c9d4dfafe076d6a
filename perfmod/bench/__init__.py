"""Microbenchmarks run on the machine at hand (ping-pong; more to come)."""
