/* Memory reclaim of frozen sandboxes (snapshotd). Filled in by the freeze/reclaim work. */
#include "snapshotd.h"
