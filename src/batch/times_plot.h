// The job-time chart of a batch (STATE/job_times.png): one row per job, a bar from its start to its end on
// a common time axis (so the workers' or tasks' overlap shows), coloured by status, with the job's name and
// seconds. Drawn with core/chart.h.
#pragma once

#include <string>
#include <vector>

#include "batch/results.h"
#include "core/image.h"

namespace sf::batch {

inline constexpr size_t kPlotMaxRows =
    60;  // more jobs: the 60 slowest are drawn, the rest counted in the title

struct TimedJob {
  std::string name;
  double started = 0, finished = 0;  // Unix time, seconds
  JobStatus status = JobStatus::kDone;
};

// The chart of `jobs` (those with a start time); 900 pixels wide, 16 pixels a row. An empty list draws a
// chart that says so.
ImageRGBA plotJobTimes(const std::vector<TimedJob>& jobs);

}  // namespace sf::batch
