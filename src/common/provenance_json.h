// JSON form of the provenance block (private: public headers do not include nlohmann/json).
#pragma once

#include <nlohmann/json.hpp>

#include "trainscope/provenance.h"

namespace trainscope {

nlohmann::json to_json(const Provenance& p);
Provenance provenance_from_json(const nlohmann::json& j);

}  // namespace trainscope
