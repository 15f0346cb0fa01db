#include "tolerance.h"

const char* tolerance_model_name(ToleranceModel m) {
    switch (m) {
        case ToleranceModel::exact: return "exact";
        case ToleranceModel::linear_k: return "linear_k";
        case ToleranceModel::sqrt_k: return "sqrt_k";
    }
    return "?";
}
