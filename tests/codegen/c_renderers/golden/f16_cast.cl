// kernel @fused_0 domain [16]
//   from fused %0
//   from mul %0
//   from cast %1
//   from div %2
__kernel void k0_fused_0(__global const ushort* b0, long b0_off, __global const ushort* b1, long b1_off, __global ushort* b2, long b2_off, __global int* b3, long b3_off, long n) {
  long p = get_global_id(0);
  if (p >= n) return;
  b0 += b0_off;
  b1 += b1_off;
  b2 += b2_off;
  b3 += b3_off;
  long v0 = p;
  float v1 = smelt_h2f(b1[v0]);
  float v2 = smelt_h2f(b0[v0]);
  float v3 = smelt_rh(v1 * v2);
  b2[v0] = (ushort)smelt_f2h(v3);
  int v4 = (int)(smelt_f2i(v3));
  int v5_d = v4 == 0 || v4 == (int)-1 ? (int)1 : v4;
  int v5 = v4 == 0 ? (int)0 : v4 == (int)-1 ? (int)((uint)0 - (uint)v4) : (int)(v4 / v5_d);
  b3[v0] = v5;
}
