// The translation unit that builds the tests' precompiled header (CMakeLists.txt: seam_test_pch).
