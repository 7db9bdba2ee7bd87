["nmcli","connection","add","type","infiniband","con-name","ib5-vfs","ifname","ib5","connection.autoconnect","no","sriov.total-vfs","4"]
