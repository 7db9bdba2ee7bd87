["mstconfig", "-d", "0000:00:00.0", "-e", "q", "LINK_TYPE_P1", "SRIOV_EN"]
