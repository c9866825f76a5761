/* Test-only fault points: a daemon started with WARREN_FAULT=<step> kills itself with SIGKILL
 * the first time it reaches fault_point("<step>"), so a crash test knows where the crash
 * landed instead of hoping a kill -9 from outside arrived in time. Unset (as under the units),
 * a fault point is one pointer test. */
#pragma once

void fault_point(const char *step);
