// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * xiwdv_probe [DEVICE...]: C user of <infiniband/xiwdv.h>.
 *
 * Prints every RDMA device with whether xiwdv_is_xiw_device() takes it for
 * an xiw device.  Fails if a named DEVICE is missing or not taken for xiw,
 * or if a device whose name does not start with "xiw" is; a machine without
 * RDMA (ENOSYS) passes if no DEVICE is named.  Built from the
 * source tree by tests/packaging/CMakeLists.txt and, in guest.packaging,
 * from the installed header with `pkg-config --cflags --libs xiw`.
 */
#include <infiniband/xiwdv.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct ibv_device **list;
	int n, i, a, ret = 0;

	list = ibv_get_device_list(&n);
	if (!list) {
		int err = errno;

		perror("ibv_get_device_list");
		/* ENOSYS: no RDMA subsystem (no /sys/class/infiniband). */
		return err == ENOSYS && argc == 1 ? 0 : 1;
	}
	for (i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);
		int is_xiw = xiwdv_is_xiw_device(list[i]);

		printf("%s: %s\n", name, is_xiw ? "xiw" : "not xiw");
		if (is_xiw != (strncmp(name, "xiw", 3) == 0)) {
			fprintf(stderr, "%s: unexpected answer\n", name);
			ret = 1;
		}
	}
	for (a = 1; a < argc; a++) {
		int found = 0;

		for (i = 0; i < n; i++)
			if (!strcmp(argv[a], ibv_get_device_name(list[i])))
				found = xiwdv_is_xiw_device(list[i]) ? 1 : -1;
		if (found != 1) {
			fprintf(stderr, "%s: %s\n", argv[a],
				found ? "not taken for an xiw device" : "no such device");
			ret = 1;
		}
	}
	ibv_free_device_list(list);
	return ret;
}
