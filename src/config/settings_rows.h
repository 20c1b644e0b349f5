// The rows of the settings table (src/config/settings_rows.cpp), for settings() to hold once.
#pragma once

#include <vector>

#include "trainscope/settings.h"

namespace trainscope {

/// Every setting's row, in documentation order (trainscope/settings.h settings()).
std::vector<Setting> setting_rows();

}  // namespace trainscope
