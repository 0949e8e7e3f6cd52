// What dwt.cu and final_level.cu share: T.800 Table F.4's lifting constants of the 9/7 filter
// (float32, as OpenJPEG and the numpy twin cinegpu.decode.transform.dwt), and how a kernel
// takes the bands of up to three components: raw device addresses of LL, HL, LH, HH and their
// four dequantisation factors (9/7: delta / 2; ignored by 5/3) per component.

#define DWT_ALPHA (-1.586134342f)
#define DWT_BETA (-0.052980118f)
#define DWT_GAMMA (0.882911075f)
#define DWT_DELTA (0.443506852f)
#define DWT_K (1.230174105f)
#define DWT_INV_K_HIGH (0.8128662109375f)

typedef unsigned long long dptr;

#define PICK3(c, a0, a1, a2) ((c) == 0 ? (a0) : ((c) == 1 ? (a1) : (a2)))

#define BANDS_PARAMS(c) dptr ll##c, dptr hl##c, dptr lh##c, dptr hh##c, \
    float qll##c, float qhl##c, float qlh##c, float qhh##c
