"""Houlsby adapters (Houlsby et al. 2019): serial bottlenecks after the attention output and the FFN output."""
