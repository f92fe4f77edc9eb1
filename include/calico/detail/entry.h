// For the inline guards: the entry word (src/translation/entry.h) and a frame's metadata
// (src/pool/frame_meta.h). Only calico/detail/ reaches into src/.
#pragma once

#include "pool/frame_meta.h"
#include "translation/entry.h"
