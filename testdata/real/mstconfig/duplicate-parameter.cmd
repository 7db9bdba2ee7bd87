["mstconfig", "-d", "0000:00:00.0", "-y", "set", "SRIOV_EN=1", "SRIOV_EN=0"]
