"""Reliability and security gates: crashes, Redis outages, Cluster, fuzzing, leaks and abuse."""
