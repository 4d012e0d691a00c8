/* Work-group reductions: one work-group (a power of two of work-items) per
 * output, each work-item striding over the reduced elements, then a tree
 * in local memory. */

/* Combines two partials: 0 sum, 1 max, 2 min (a NaN wins max and min), 3 product. */
float ocl_combine(int op, float a, float b) {
    switch (op) {
    case 1: return isnan(a) ? a : isnan(b) ? b : (b > a ? b : a);
    case 2: return isnan(a) ? a : isnan(b) ? b : (b < a ? b : a);
    case 3: return a * b;
    default: return a + b;
    }
}

/* The combination of every work-item's v, returned to all of them. */
float ocl_wg_reduce(local float *s, int op, float v) {
    int lid = (int)get_local_id(0), wg = (int)get_local_size(0);
    s[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int off = wg / 2; off > 0; off >>= 1) {
        if (lid < off) {
            s[lid] = ocl_combine(op, s[lid], s[lid + off]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float r = s[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* Reduce (func: the plx_reduce_func values): output o reads X at
 * offset(o over the kept dims) + offset(r over the reduced dims) for r in
 * [0, count). Every work-item reaches every barrier: a group past the
 * outputs (none: the host sizes the range exactly) reads and writes
 * nothing instead of returning early. */
kernel void reduce_f32(global const float *x, global float *y, int outputs, int count, int func,
                       int kept_rank, int8 kept_dims, int8 kept_st, int red_rank, int8 red_dims,
                       int8 red_st, local float *scratch) {
    int o = (int)get_group_id(0);
    bool valid = o < outputs;
    int n = valid ? count : 0;
    int lid = (int)get_local_id(0), wg = (int)get_local_size(0);
    int kd[8], ks[8], rd[8], rs[8];
    vstore8(kept_dims, 0, kd);
    vstore8(kept_st, 0, ks);
    vstore8(red_dims, 0, rd);
    vstore8(red_st, 0, rs);
    global const float *xb = x + (valid ? ocl_offset(o, kept_rank, kd, ks) : 0);
    /* log_sum_exp: the maximum first; the result is the maximum itself when
     * that is not finite */
    float mx = -INFINITY;
    for (int r = lid; func == 9 && r < n; r += wg) {
        float v = xb[ocl_offset(r, red_rank, rd, rs)];
        mx = v > mx || isnan(v) ? v : mx;
    }
    mx = ocl_wg_reduce(scratch, 1, mx);
    bool special = func == 9 && !isfinite(mx);
    if (special) {
        n = 0;
    }
    int op = func == 1 ? 1 : func == 2 ? 2 : func == 4 ? 3 : 0;
    float acc = func == 1 ? -INFINITY : func == 2 ? INFINITY : func == 4 ? 1.0f : 0.0f;
    for (int r = lid; r < n; r += wg) {
        float v = xb[ocl_offset(r, red_rank, rd, rs)];
        switch (func) {
        case 1: acc = v > acc || isnan(v) ? v : acc; break;
        case 2: acc = v < acc || isnan(v) ? v : acc; break;
        case 4: acc *= v; break;
        case 5: acc += fabs(v); break;
        case 6:
        case 7: acc += v * v; break;
        case 9: acc += exp(v - mx); break;
        default: acc += v; break; /* mean, sum, log_sum */
        }
    }
    acc = ocl_wg_reduce(scratch, op, acc);
    if (lid == 0 && valid) {
        switch (func) {
        case 0: acc = acc / (float)count; break;
        case 6: acc = sqrt(acc); break;
        case 8: acc = log(acc); break;
        case 9: acc = special ? mx : mx + log(acc); break;
        default: break;
        }
        y[o] = acc;
    }
}

/* ArgMax / ArgMin along an axis (X as [outer, len, inner]), one work-item
 * per output: the first best index, or the last with select_last; a NaN
 * wins over every number in both. */
kernel void arg_reduce_f32(global const float *x, global long *y, int outputs, int len,
                           int inner, int select_min, int select_last) {
    int i = (int)get_global_id(0);
    if (i >= outputs) {
        return;
    }
    int o = i / inner, in = i % inner;
    global const float *xb = x + o * len * inner + in;
    int best = 0;
    for (int j = 1; j < len; j++) {
        float a = xb[j * inner], b = xb[best * inner];
        int c;
        bool na = isnan(a), nb = isnan(b);
        if (na || nb) {
            c = (int)na - (int)nb;
        } else {
            c = (a > b) - (a < b);
            if (select_min) {
                c = -c;
            }
        }
        if (c > 0 || (c == 0 && select_last)) {
            best = j;
        }
    }
    y[i] = best;
}
