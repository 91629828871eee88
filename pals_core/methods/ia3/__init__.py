"""(IA)³ (Liu et al. 2022, "Few-Shot Parameter-Efficient Fine-Tuning is Better and Cheaper than In-Context
Learning", Sec. 3.3): learned vectors rescaling the keys, the values and the FFN activation of each adapted layer."""
