["mstconfig", "-y", "set", "SRIOV_EN=1"]
