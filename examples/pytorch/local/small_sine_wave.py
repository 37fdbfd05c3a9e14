"""time_sequence_prediction's generate_sine_wave.py with 12 waves of 120 points instead of
100 of 1000 (the same recipe and seed; written by the same runner, real torch or xad, since
each side's torch.save writes its own format). For the quick test run."""

import numpy as np
import torch

np.random.seed(2)

T = 20
L = 120
N = 12

x = np.empty((N, L), 'int64')
x[:] = np.array(range(L)) + np.random.randint(-4 * T, 4 * T, N).reshape(N, 1)
data = np.sin(x / 1.0 / T).astype('float64')
torch.save(data, open('traindata.pt', 'wb'))
