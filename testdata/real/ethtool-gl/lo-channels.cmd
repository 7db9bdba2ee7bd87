["ethtool", "-l", "lo"]
