["ethtool", "-g", "lo"]
