/* The supervisor's D-Bus error names in one table mapped to errno (as systemd's machined does
 * with its bus-error map), so a name and its errno are decided in one place: the D-Bus API
 * lists them in docs/DBUS-API.md, and unit-bus-errors checks that every ERR() name the
 * supervisor sends is here. Runs in warren-supervisor. */
#include "bus-errors.h"

#include <errno.h>

const sd_bus_error_map warren_bus_errors[] = {
	SD_BUS_ERROR_MAP(ERR("NoSuchTemplate"), ENOENT),
	SD_BUS_ERROR_MAP(ERR("TemplateNotBuilt"), ENOENT),
	SD_BUS_ERROR_MAP(ERR("NoSuchBackend"), EOPNOTSUPP),
	SD_BUS_ERROR_MAP(ERR("InvalidArgument"), EINVAL),
	SD_BUS_ERROR_MAP(ERR("InvalidPath"), EINVAL),
	SD_BUS_ERROR_MAP(ERR("TemplateExists"), EEXIST),
	SD_BUS_ERROR_MAP(ERR("TemplateInUse"), EBUSY),
	SD_BUS_ERROR_MAP(ERR("TemplateBusy"), EBUSY),
	SD_BUS_ERROR_MAP(ERR("PoolExhausted"), EAGAIN),
	SD_BUS_ERROR_MAP(ERR("HostFull"), ENOMEM),
	SD_BUS_ERROR_MAP(ERR("HelperUnavailable"), ENOTCONN),
	SD_BUS_ERROR_MAP(ERR("SpawnFailed"), EIO),
	SD_BUS_ERROR_MAP(ERR("Destroyed"), ECANCELED),
	SD_BUS_ERROR_MAP(ERR("BadState"), EBUSY),
	SD_BUS_ERROR_MAP(ERR("ExecFailed"), EIO),
	SD_BUS_ERROR_MAP(ERR("ExecTimedOut"), ETIMEDOUT),
	SD_BUS_ERROR_MAP(ERR("ExecInterrupted"), ECONNABORTED),
	SD_BUS_ERROR_MAP(ERR("ReclaimSetupFailed"), EIO),
	SD_BUS_ERROR_MAP(ERR("SnapshotFailed"), EIO),
	SD_BUS_ERROR_MAP(ERR("TagExists"), EEXIST),
	SD_BUS_ERROR_MAP(ERR("TagBusy"), EBUSY),
	SD_BUS_ERROR_MAP(ERR("NoSuchTag"), ENOENT),
	SD_BUS_ERROR_MAP(ERR("NoSuchSandbox"), ENOENT),
	SD_BUS_ERROR_MAP(ERR("ImportFailed"), EIO),
	SD_BUS_ERROR_MAP(ERR("NotSupported"), EOPNOTSUPP),
	SD_BUS_ERROR_MAP(ERR("LogsUnavailable"), ENODATA),
	SD_BUS_ERROR_MAP_END,
};

int
bus_errors_init(void)
{
	int r = sd_bus_error_add_map(warren_bus_errors);
	return r < 0 ? r : 0;
}
