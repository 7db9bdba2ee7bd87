["nmcli","connection","modify","05517b2f-a80a-44ef-8000-06619c735b38","infiniband.nonsense","1"]
