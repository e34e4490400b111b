// kernel @fused_0 domain [16]
//   from fused %0
//   from mul %0
//   from cast %1
//   from div %2
extern "C" __global__ void k0_fused_0(const unsigned short* b0, const unsigned short* b1, unsigned short* b2, int* b3, long long n) {
  long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= n) return;
  long long v0 = p;
  float v1 = smelt_h2f(b1[v0]);
  float v2 = smelt_h2f(b0[v0]);
  float v3 = smelt_rh(v1 * v2);
  b2[v0] = (unsigned short)smelt_f2h(v3);
  int v4 = (int)(smelt_f2i(v3));
  int v5_d = v4 == 0 || v4 == (int)-1 ? (int)1 : v4;
  int v5 = v4 == 0 ? (int)0 : v4 == (int)-1 ? (int)((unsigned int)0 - (unsigned int)v4) : (int)(v4 / v5_d);
  b3[v0] = v5;
}
