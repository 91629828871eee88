"""LHUC, learning hidden unit contributions (Swietojanski & Renals 2014): a scale on each adapted layer's output."""
