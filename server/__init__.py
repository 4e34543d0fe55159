"""Flows Lab: an interactive course on EchoMQ flows, backed by a real Valkey."""
