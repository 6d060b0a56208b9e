// Exit status 0 when the build machine runs x86-64-v3 code: AVX2, FMA and BMI2 (the micro-architecture
// level's other features come with these on every CPU that has them). Run once by CMakeLists.txt to
// choose TILESCOPE_MARCH.
int main() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2")
             ? 0
             : 1;
}
