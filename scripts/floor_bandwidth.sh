# Sourced by the GPU scripts whose floors are bytes over bandwidth: sets SEAM_FLOOR_BW (bytes a second,
# read + write) for the GPU in use unless the caller set it, and SEAM_FLOOR_BW_WHY (what it is).
#   H200: 4.3e12, the device copy measured on the lent H200 (../shared/DEVICE.md: 4.0-4.3 TB/s).
#   H100: 3.0e12, an estimate: the H100 SXM's 3.35 TB/s nominal times the H200's measured / nominal (4.3 / 4.8);
#         seam_kernel_bench prints the copy it measures at start ("copy ... measured now"), which replaces it.
#   other: 4.3e12, the H200's (named as such).
if [ -z "${SEAM_FLOOR_BW:-}" ]; then
  _gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  case "$_gpu_name" in
    *H200*) SEAM_FLOOR_BW=4.3e12 SEAM_FLOOR_BW_WHY="the H200's measured copy" ;;
    *H100*) SEAM_FLOOR_BW=3.0e12 SEAM_FLOOR_BW_WHY="an H100 estimate: 3.35 TB/s nominal x 4.3/4.8" ;;
    *) SEAM_FLOOR_BW=4.3e12 SEAM_FLOOR_BW_WHY="the H200's measured copy (GPU '${_gpu_name:-unknown}')" ;;
  esac
else
  SEAM_FLOOR_BW_WHY=${SEAM_FLOOR_BW_WHY:-"set by the caller"}
fi
export SEAM_FLOOR_BW SEAM_FLOOR_BW_WHY
