/* train.h - the applications' training kit in one include: the server's model, stragglers, local steps, data, evaluation, records. */
#ifndef MLF_TRAIN_H
#define MLF_TRAIN_H

#include "train_data.h"
#include "train_eval.h"
#include "train_local.h"
#include "train_model.h"
#include "train_rec.h"
#include "train_straggle.h"

#endif
