// Copy a C-contiguous RGBA16 frame (height x width x 4 uint16, row 0 first) from device memory
// into a CUDA surface: a GL_RGBA16 texture registered with cudaGraphicsRegisterFlagsSurfaceLoadStore
// and mapped.  One thread a sample; surf2Dwrite takes x in bytes.

extern "C" __global__ void rgba16_to_surface(const ushort4 *src, unsigned long long surface,
                                             int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        surf2Dwrite(src[(long long)y * width + x], (cudaSurfaceObject_t)surface,
                    x * (int)sizeof(ushort4), y);
    }
}
