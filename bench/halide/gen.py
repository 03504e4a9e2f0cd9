"""Ahead-of-time compiles the Halide 21 versions of Argent's examples to
wasm-32-wasmrt-wasm_simd128 objects, one per (algorithm, schedule) pair.

Each pipeline is written to match an examples/*.ag file stage for stage and
directive for directive, so that `cargo xtask bench` compares two compilers on
the same algorithm and schedule rather than two different programs.

Usage: python3 gen.py OUT_DIR [NAME ...]   (no names: all of them)
Writes OUT_DIR/NAME.o and OUT_DIR/NAME.h; the caller links the objects with
rust-lld into .wasm modules.
"""

import os
import sys
import warnings

import halide as hl

# Argent's float literals are f32 as well, so Halide's warning that a Python
# float becomes f32 is expected here.
warnings.filterwarnings("ignore", category=RuntimeWarning)

TARGET = hl.Target("wasm-32-wasmrt-wasm_simd128")


def blur(schedule):
    """examples/box_blur.ag: 3x3 box blur on u16, repeat_edge, /3 twice."""
    x, y, xi, yi = hl.Var("x"), hl.Var("y"), hl.Var("xi"), hl.Var("yi")
    inp = hl.ImageParam(hl.UInt(16), 2, "input")
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    blur_x, blur_y = hl.Func("blur_x"), hl.Func("blur_y")
    blur_x[x, y] = (clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y]) / 3
    blur_y[x, y] = (blur_x[x, y - 1] + blur_x[x, y] + blur_x[x, y + 1]) / 3
    if schedule == "paper":
        # The schedule of examples/box_blur.ag (the Halide paper's).
        blur_y.tile(x, y, xi, yi, 256, 32).vectorize(xi, 8).parallel(y)
        blur_x.compute_at(blur_y, x).vectorize(x, 8)
    elif schedule == "strip":
        # Halide's fastest schedule for this blur on one core: strips of 32
        # rows with the horizontal pass as a sliding window.
        blur_y.split(y, y, yi, 32).parallel(y).vectorize(x, 8)
        blur_x.store_at(blur_y, y).compute_at(blur_y, yi).vectorize(x, 8)
    else:
        raise ValueError(schedule)
    return blur_y, [inp]


def unsharp():
    """examples/unsharp_mask.ag: [1 2 1]/4 separable blur in f32 on an
    interleaved u8 image, sharpened by `amount`, saturated back to u8."""
    x, y, c = hl.Var("x"), hl.Var("y"), hl.Var("c")
    yo, yi = hl.Var("yo"), hl.Var("yi")
    photo = hl.ImageParam(hl.UInt(8), 3, "photo")
    amount = hl.Param(hl.Float(32), "amount", 1.5)
    p = hl.BoundaryConditions.repeat_edge(photo)
    f, blur_x, blur, sharp, out = (hl.Func(n) for n in ("f", "blur_x", "blur", "sharp", "out"))
    f[x, y, c] = hl.f32(p[x, y, c])
    blur_x[x, y, c] = (f[x - 1, y, c] + 2 * f[x, y, c] + f[x + 1, y, c]) / 4
    blur[x, y, c] = (blur_x[x, y - 1, c] + 2 * blur_x[x, y, c] + blur_x[x, y + 1, c]) / 4
    sharp[x, y, c] = hl.select(c == 3, f[x, y, c], f[x, y, c] + amount * (f[x, y, c] - blur[x, y, c]))
    out[x, y, c] = hl.saturating_cast(hl.UInt(8), sharp[x, y, c] + 0.5)
    out.split(y, yo, yi, 32).reorder(c, x, yi, yo).vectorize(x, 16).parallel(yo)
    blur_x.store_at(out, yo).compute_at(out, yi).reorder(c, x, y).vectorize(x, 4)
    # Interleaved (x, y, c) layout in and out, as canvas images are.
    for buf in (photo, out.output_buffer()):
        buf.dim(0).set_stride(3)
        buf.dim(2).set_stride(1).set_min(0).set_extent(3)
    return out, [photo, amount]


def local_laplacian():
    """examples/local_laplacian.ag (Halide's apps/local_laplacian, J = 8
    pyramid levels) on a planar u16 RGB image, with its CPU schedule."""
    J = 8
    x, y, c, k = hl.Var("x"), hl.Var("y"), hl.Var("c"), hl.Var("k")
    yo, yi = hl.Var("yo"), hl.Var("yi")
    photo = hl.ImageParam(hl.UInt(16), 3, "photo")
    levels = hl.Param(hl.Int(32), "levels", 8)
    alpha = hl.Param(hl.Float(32), "alpha", 1.0)
    beta = hl.Param(hl.Float(32), "beta", 1.0)

    def down(f, name):
        fx, fy = hl.Func(name + "_x"), hl.Func(name)
        if f.dimensions() == 3:
            fx[x, y, k] = (f[2 * x - 1, y, k] + 3.0 * (f[2 * x, y, k] + f[2 * x + 1, y, k]) + f[2 * x + 2, y, k]) / 8.0
            fy[x, y, k] = (fx[x, 2 * y - 1, k] + 3.0 * (fx[x, 2 * y, k] + fx[x, 2 * y + 1, k]) + fx[x, 2 * y + 2, k]) / 8.0
        else:
            fx[x, y] = (f[2 * x - 1, y] + 3.0 * (f[2 * x, y] + f[2 * x + 1, y]) + f[2 * x + 2, y]) / 8.0
            fy[x, y] = (fx[x, 2 * y - 1] + 3.0 * (fx[x, 2 * y] + fx[x, 2 * y + 1]) + fx[x, 2 * y + 2]) / 8.0
        return fy

    def up(f, name):
        ux, uy = hl.Func(name + "_x"), hl.Func(name)
        if f.dimensions() == 3:
            ux[x, y, k] = 0.25 * f[x / 2 - 1 + 2 * (x % 2), y, k] + 0.75 * f[x / 2, y, k]
            uy[x, y, k] = 0.25 * ux[x, y / 2 - 1 + 2 * (y % 2), k] + 0.75 * ux[x, y / 2, k]
        else:
            ux[x, y] = 0.25 * f[x / 2 - 1 + 2 * (x % 2), y] + 0.75 * f[x / 2, y]
            uy[x, y] = 0.25 * ux[x, y / 2 - 1 + 2 * (y % 2)] + 0.75 * ux[x, y / 2]
        return uy

    remap = hl.Func("remap")
    i = hl.Var("i")
    fx = hl.f32(i) / 256.0
    remap[i] = (alpha / hl.f32(levels - 1)) * fx * hl.exp(-fx * fx / 2.0)
    clamped = hl.BoundaryConditions.repeat_edge(photo)
    floating, gray = hl.Func("floating"), hl.Func("gray")
    floating[x, y, c] = hl.f32(clamped[x, y, c]) / 65535.0
    gray[x, y] = 0.299 * floating[x, y, 0] + 0.587 * floating[x, y, 1] + 0.114 * floating[x, y, 2]

    gpyr = [hl.Func("gpyr_0")]
    level = hl.f32(k) * (1.0 / hl.f32(levels - 1))
    idx = hl.clamp(hl.i32(gray[x, y] * hl.f32(levels - 1) * 256.0), 0, (levels - 1) * 256)
    gpyr[0][x, y, k] = beta * (gray[x, y] - level) + level + remap[idx - 256 * k]
    for j in range(1, J):
        gpyr.append(down(gpyr[j - 1], f"gpyr_{j}"))
    lpyr = [None] * J
    lpyr[J - 1] = gpyr[J - 1]
    for j in range(J - 2, -1, -1):
        lpyr[j] = hl.Func(f"lpyr_{j}")
        lpyr[j][x, y, k] = gpyr[j][x, y, k] - up(gpyr[j + 1], f"gpyr_{j + 1}_up")[x, y, k]
    inpyr = [hl.Func("inpyr_0")]
    inpyr[0][x, y] = gray[x, y]
    for j in range(1, J):
        inpyr.append(down(inpyr[j - 1], f"inpyr_{j}"))
    outl = []
    for j in range(J):
        o = hl.Func(f"outl_{j}")
        lv = inpyr[j][x, y] * hl.f32(levels - 1)
        li = hl.clamp(hl.i32(lv), 0, levels - 2)
        lf = lv - hl.f32(li)
        o[x, y] = (1.0 - lf) * lpyr[j][x, y, li] + lf * lpyr[j][x, y, li + 1]
        outl.append(o)
    outg = [None] * J
    outg[J - 1] = outl[J - 1]
    for j in range(J - 2, -1, -1):
        outg[j] = hl.Func(f"outg_{j}")
        outg[j][x, y] = up(outg[j + 1], f"outg_{j + 1}_up")[x, y] + outl[j][x, y]
    eps = 0.01
    color, output = hl.Func("color"), hl.Func("output_image")
    color[x, y, c] = outg[0][x, y] * (floating[x, y, c] + eps) / (gray[x, y] + eps)
    output[x, y, c] = hl.u16(hl.clamp(color[x, y, c], 0.0, 1.0) * 65535.0)

    # The schedule of examples/local_laplacian.ag (Halide's CPU schedule with
    # 4 f32 lanes, which is what a v128 register holds).
    remap.compute_root()
    output.reorder(c, x, y).split(y, yo, yi, 64).parallel(yo).vectorize(x, 8)
    gray.compute_root().parallel(y, 32).vectorize(x, 4)
    for j in range(1, 5):
        inpyr[j].compute_root().parallel(y, 32).vectorize(x, 4)
        gpyr[j].compute_root().reorder(k, y).parallel(y, 8).vectorize(x, 4)
        outg[j].store_at(output, yo).compute_at(output, yi).fold_storage(y, 8).vectorize(x, 4)
    outg[0].compute_at(output, yi).vectorize(x, 4)
    for j in range(5, J):
        inpyr[j].compute_root()
        gpyr[j].compute_root().parallel(k)
        outg[j].compute_root()
    return output, [photo, levels, alpha, beta]


def bilateral_grid():
    """examples/bilateral_grid.ag (after Halide's apps/bilateral_grid): the
    luma of an interleaved u8 RGB photo filtered through a bilateral grid
    (8x8-pixel cells, r_sigma intensity cells), colour reapplied by the
    ratio filtered / original luma; the file's schedule (Halide's CPU
    schedule with 4 f32 lanes)."""
    x, y, z, c = hl.Var("x"), hl.Var("y"), hl.Var("z"), hl.Var("c")
    photo = hl.ImageParam(hl.UInt(8), 3, "photo")
    r_sigma = hl.Param(hl.Float(32), "r_sigma", 0.1)
    s_sigma = 8
    p = hl.BoundaryConditions.repeat_edge(photo)
    gray, cell = hl.Func("gray"), hl.Func("cell")
    gray[x, y] = hl.clamp(
        (0.299 * hl.f32(p[x, y, 0]) + 0.587 * hl.f32(p[x, y, 1]) + 0.114 * hl.f32(p[x, y, 2])) / 255.0, 0.0, 1.0
    )
    cell[x, y] = hl.i32(gray[x, y] * (1.0 / r_sigma) + 0.5)
    r = hl.RDom([(0, s_sigma), (0, s_sigma)], "r")
    histogram = hl.Func("histogram")
    histogram[x, y, z, c] = 0.0
    sx = x * s_sigma + r.x - s_sigma // 2
    sy = y * s_sigma + r.y - s_sigma // 2
    histogram[x, y, cell[sx, sy], c] += hl.select(c == 0, gray[sx, sy], 1.0)
    blurz, blurx, blury = hl.Func("blurz"), hl.Func("blurx"), hl.Func("blury")
    blurz[x, y, z, c] = (
        histogram[x, y, z - 2, c] + histogram[x, y, z - 1, c] * 4 + histogram[x, y, z, c] * 6
        + histogram[x, y, z + 1, c] * 4 + histogram[x, y, z + 2, c]
    )
    blurx[x, y, z, c] = (
        blurz[x - 2, y, z, c] + blurz[x - 1, y, z, c] * 4 + blurz[x, y, z, c] * 6
        + blurz[x + 1, y, z, c] * 4 + blurz[x + 2, y, z, c]
    )
    blury[x, y, z, c] = (
        blurx[x, y - 2, z, c] + blurx[x, y - 1, z, c] * 4 + blurx[x, y, z, c] * 6
        + blurx[x, y + 1, z, c] * 4 + blurx[x, y + 2, z, c]
    )
    interpolated, filtered, out = hl.Func("interpolated"), hl.Func("filtered"), hl.Func("out")
    zv = gray[x, y] * (1.0 / r_sigma)
    zi = hl.i32(zv)
    zf = zv - hl.f32(zi)
    xf = hl.f32(x % s_sigma) / float(s_sigma)
    yf = hl.f32(y % s_sigma) / float(s_sigma)
    xi, yi = x / s_sigma, y / s_sigma

    def lerp(a, b, w):
        return a + (b - a) * w

    interpolated[x, y, c] = lerp(
        lerp(lerp(blury[xi, yi, zi, c], blury[xi + 1, yi, zi, c], xf),
             lerp(blury[xi, yi + 1, zi, c], blury[xi + 1, yi + 1, zi, c], xf), yf),
        lerp(lerp(blury[xi, yi, zi + 1, c], blury[xi + 1, yi, zi + 1, c], xf),
             lerp(blury[xi, yi + 1, zi + 1, c], blury[xi + 1, yi + 1, zi + 1, c], xf), yf),
        zf,
    )
    filtered[x, y] = interpolated[x, y, 0] / interpolated[x, y, 1]
    eps = 0.01
    out[x, y, c] = hl.select(
        c == 3,
        p[x, y, c],
        hl.saturating_cast(hl.UInt(8), hl.f32(p[x, y, c]) * (filtered[x, y] + eps) / (gray[x, y] + eps) + 0.5),
    )
    # The schedule of examples/bilateral_grid.ag.
    yo = hl.Var("yo")
    blurz.compute_at(blurx, y).reorder(c, z, x, y).vectorize(x, 4).unroll(c)
    histogram.compute_at(blurz, y)
    histogram.update(0).reorder(c, r.x, r.y, x, y).unroll(c)
    blurx.compute_root().reorder(c, x, z, y).parallel(y).vectorize(x, 4).unroll(c)
    blury.compute_at(out, y).reorder(c, x, y, z).vectorize(x, 4).unroll(c)
    filtered.compute_at(out, y).vectorize(x, 4)
    out.reorder(c, x, y).parallel(y, 8).vectorize(x, 16)
    for buf in (photo, out.output_buffer()):
        buf.dim(0).set_stride(3)
        buf.dim(2).set_stride(1).set_min(0).set_extent(3)
    return out, [photo, r_sigma]


PIPELINES = {
    "halide_blur_paper": lambda: blur("paper"),
    "halide_blur_strip": lambda: blur("strip"),
    "halide_unsharp": unsharp,
    "halide_local_laplacian": local_laplacian,
    "halide_bilateral_grid": bilateral_grid,
}


def main():
    out_dir = sys.argv[1]
    names = sys.argv[2:] or list(PIPELINES)
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        func, args = PIPELINES[name]()
        base = os.path.join(out_dir, name)
        func.compile_to(
            {hl.OutputFileType.object: base + ".o", hl.OutputFileType.c_header: base + ".h"},
            args,
            name,
            TARGET,
        )
        print(f"halide: wrote {base}.o")


if __name__ == "__main__":
    main()
