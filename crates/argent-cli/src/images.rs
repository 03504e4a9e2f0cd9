//! Photos in and out: decoding PNG/JPEG files into typed interpreter
//! buffers shaped like a pipeline's input declaration, and turning output
//! buffers of any type back into 8-bit PNG (or JPEG) files.
//!
//! The conventions, which `argent run --help` repeats for users:
//!
//! - Shape. A photo is mapped to `(x, y)` or `(x, y, c)`. An input declared
//!   with 2 dimensions gets the photo's luma (ITU-R BT.601 weights
//!   0.299/0.587/0.114, rounded; alpha ignored). An input declared with 3
//!   dimensions gets the channels as decoded (gray, RGB or RGBA; gray+alpha
//!   becomes RGBA), except that a gray photo is expanded to RGB so that
//!   colour pipelines run on it. Three-dimensional inputs are interleaved
//!   (`c` innermost in memory, as canvas RGBA data); two-dimensional ones are
//!   rows of pixels.
//! - Type. An 8-bit sample `v` becomes `v` for u8, i16, u32 and i32;
//!   `v * 257` for u16 (0..65535, as Halide's image loader does) or, with
//!   `--bits N`, `v` scaled to 0..2^N-1 (rounded), for data of N significant
//!   bits such as 12-bit camera data; `v >> 1`
//!   for i8 (0..127); `v / 255` for f32 (0.0..1.0); `v >= 128` for bool.
//! - Output. Buffers of 2 dimensions are written as gray, 3 dimensions with
//!   1, 2, 3 or 4 channels as gray, gray+alpha, RGB or RGBA. Values map back
//!   to 8 bits as the inverse of the input rule: u16 `>> 8` (with `--bits N`,
//!   clamped to 0..2^N-1 and scaled back, rounded); i8 clamped to
//!   0..127 then doubled; i16, u32 and i32 clamped to 0..255; f32 outputs are
//!   assumed to lie in 0.0..1.0, clamped, scaled by 255 and rounded (NaN
//!   gives 0); bool gives 0 or 255.

use argent_interp::{Buffer, Value};
use argent_ir::{Type, TypeKind};
use std::path::Path;

/// A decoded 8-bit image: `channels` interleaved samples per pixel, rows
/// top to bottom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Raster {
    pub width: u32,
    pub height: u32,
    /// 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA).
    pub channels: u8,
    pub samples: Vec<u8>,
}

impl Raster {
    /// The sample of channel `c` of pixel `(x, y)`.
    fn sample(&self, x: u32, y: u32, c: u8) -> u8 {
        let index =
            (y as usize * self.width as usize + x as usize) * self.channels as usize + c as usize;
        self.samples[index]
    }
}

/// Decodes a PNG or JPEG file held in memory. Images with more than 8 bits
/// per sample are scaled to 8 bits; gray+alpha becomes RGBA so that every
/// raster has 1, 3 or 4 channels.
pub fn decode(bytes: &[u8]) -> Result<Raster, String> {
    let image = image::load_from_memory(bytes).map_err(|e| e.to_string())?;
    let (width, height) = (image.width(), image.height());
    let (channels, samples) = match image.color().channel_count() {
        1 => (1, image.into_luma8().into_raw()),
        3 => (3, image.into_rgb8().into_raw()),
        _ => (4, image.into_rgba8().into_raw()),
    };
    Ok(Raster {
        width,
        height,
        channels,
        samples,
    })
}

/// Reads and decodes an image file; the error names the file.
pub fn read(path: &Path) -> Result<Raster, String> {
    let bytes =
        std::fs::read(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    decode(&bytes).map_err(|e| format!("cannot decode `{}`: {e}", path.display()))
}

/// BT.601 luma of an RGB(A) pixel, rounded to nearest, in integer
/// arithmetic (weights in units of 1/1000).
fn luma(r: u8, g: u8, b: u8) -> u8 {
    ((299 * r as u32 + 587 * g as u32 + 114 * b as u32 + 500) / 1000) as u8
}

/// The value an 8-bit sample takes in an input of type `ty` (see the
/// module documentation).
///
/// `bits` is the number of significant bits of u16 data (16 fills the
/// range; fewer leaves headroom, as for 12-bit camera data).
pub fn sample_to_value(sample: u8, ty: Type, bits: u8) -> Value {
    let v = sample as i64;
    match (ty.kind, ty.bits) {
        (TypeKind::Float, _) => Value::Float(sample as f32 / 255.0),
        (TypeKind::Bool, _) => Value::Int((sample >= 128) as i64),
        (TypeKind::UInt, 16) if bits < 16 => {
            let top = (1i64 << bits) - 1;
            Value::Int((v * top + 127) / 255)
        }
        (TypeKind::UInt, 16) => Value::Int(v * 257),
        (TypeKind::Int, 8) => Value::Int(v >> 1),
        _ => Value::Int(v),
    }
}

/// The 8-bit sample written for an output value of type `ty` (see the
/// module documentation).
pub fn value_to_sample(value: Value, ty: Type, bits: u8) -> u8 {
    match (ty.kind, ty.bits) {
        (TypeKind::UInt, 16) if bits < 16 => {
            let top = (1i64 << bits) - 1;
            ((value.as_i64().clamp(0, top) * 255 + top / 2) / top) as u8
        }
        (TypeKind::Float, _) => {
            let f = value.as_f32();
            if f.is_nan() {
                0
            } else {
                (f.clamp(0.0, 1.0) * 255.0).round() as u8
            }
        }
        (TypeKind::Bool, _) => {
            if value.as_i64() != 0 {
                255
            } else {
                0
            }
        }
        (TypeKind::UInt, 16) => (value.as_i64().clamp(0, 65535) >> 8) as u8,
        (TypeKind::Int, 8) => (value.as_i64().clamp(0, 127) * 2) as u8,
        _ => value.as_i64().clamp(0, 255) as u8,
    }
}

/// Converts a photo into a buffer for an input declared with `dims`
/// dimensions of element type `ty`. Errors are user errors (an input shape
/// the CLI cannot fill from a photo).
pub fn to_input_buffer(
    raster: &Raster,
    name: &str,
    dims: usize,
    ty: Type,
    bits: u8,
) -> Result<Buffer, String> {
    let (w, h) = (raster.width as i64, raster.height as i64);
    match dims {
        2 => {
            let mut buffer = Buffer::new(ty, &[w, h]);
            for y in 0..raster.height {
                for x in 0..raster.width {
                    let sample = match raster.channels {
                        1 | 2 => raster.sample(x, y, 0),
                        _ => luma(
                            raster.sample(x, y, 0),
                            raster.sample(x, y, 1),
                            raster.sample(x, y, 2),
                        ),
                    };
                    buffer.set(&[x as i64, y as i64], sample_to_value(sample, ty, bits));
                }
            }
            Ok(buffer)
        }
        3 => {
            // Gray photos are expanded to RGB so colour pipelines run on them.
            let channels = if raster.channels == 1 {
                3
            } else {
                raster.channels
            };
            let mut buffer = Buffer::interleaved(ty, &[w, h, channels as i64]);
            for y in 0..raster.height {
                for x in 0..raster.width {
                    for c in 0..channels {
                        let source_channel = if raster.channels == 1 { 0 } else { c };
                        let sample = raster.sample(x, y, source_channel);
                        buffer.set(
                            &[x as i64, y as i64, c as i64],
                            sample_to_value(sample, ty, bits),
                        );
                    }
                }
            }
            Ok(buffer)
        }
        _ => Err(format!(
            "input `{name}` has {dims} dimension(s), but a photo can only fill an input with 2 dimensions (x, y) or 3 (x, y, c)"
        )),
    }
}

/// Converts an output buffer to an 8-bit raster. Errors are user errors
/// (an output shape that is not an image).
pub fn from_output_buffer(buffer: &Buffer, name: &str, bits: u8) -> Result<Raster, String> {
    let dims = buffer.dims();
    let channels = match dims.len() {
        2 => 1,
        3 => dims[2].extent,
        n => {
            return Err(format!(
                "output `{name}` has {n} dimension(s); only 2 (x, y) or 3 (x, y, c) can be written as an image"
            ));
        }
    };
    if !(1..=4).contains(&channels) {
        return Err(format!(
            "output `{name}` has {channels} channels; an image needs 1 to 4 (use --size or the pipeline to pick the channel range)"
        ));
    }
    let (width, height) = (dims[0].extent, dims[1].extent);
    if width <= 0 || height <= 0 || width > u32::MAX as i64 || height > u32::MAX as i64 {
        return Err(format!(
            "output `{name}` is {width}x{height}, which cannot be written as an image"
        ));
    }
    let ty = buffer.ty();
    let mut samples = Vec::with_capacity((width * height * channels) as usize);
    for y in dims[1].min..dims[1].min + height {
        for x in dims[0].min..dims[0].min + width {
            if dims.len() == 2 {
                samples.push(value_to_sample(
                    buffer.get(&[x, y]).unwrap_or(Value::Int(0)),
                    ty,
                    bits,
                ));
            } else {
                for c in dims[2].min..dims[2].min + channels {
                    samples.push(value_to_sample(
                        buffer.get(&[x, y, c]).unwrap_or(Value::Int(0)),
                        ty,
                        bits,
                    ));
                }
            }
        }
    }
    Ok(Raster {
        width: width as u32,
        height: height as u32,
        channels: channels as u8,
        samples,
    })
}

/// The format an output file name asks for: PNG, or JPEG for `.jpg` and
/// `.jpeg`. Anything else is a user error, reported before a run starts.
pub fn output_format(path: &Path) -> Result<image::ImageFormat, String> {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match extension.as_str() {
        "png" => Ok(image::ImageFormat::Png),
        "jpg" | "jpeg" => Ok(image::ImageFormat::Jpeg),
        _ => Err(format!(
            "cannot write `{}`: the output file name must end in .png, .jpg or .jpeg",
            path.display()
        )),
    }
}

/// Writes a raster as PNG, or as JPEG when the file name ends in `.jpg` or
/// `.jpeg` (JPEG has no alpha, so alpha is dropped). Creates missing parent
/// folders.
pub fn write(raster: &Raster, path: &Path) -> Result<(), String> {
    let format = output_format(path)?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create folder `{}`: {e}", parent.display()))?;
    }
    let (mut color, mut samples) = match raster.channels {
        1 => (image::ExtendedColorType::L8, raster.samples.clone()),
        2 => (image::ExtendedColorType::La8, raster.samples.clone()),
        3 => (image::ExtendedColorType::Rgb8, raster.samples.clone()),
        _ => (image::ExtendedColorType::Rgba8, raster.samples.clone()),
    };
    if format == image::ImageFormat::Jpeg && (raster.channels == 2 || raster.channels == 4) {
        let keep = raster.channels as usize - 1;
        samples = raster
            .samples
            .chunks_exact(raster.channels as usize)
            .flat_map(|pixel| pixel[..keep].to_vec())
            .collect();
        color = if keep == 1 {
            image::ExtendedColorType::L8
        } else {
            image::ExtendedColorType::Rgb8
        };
    }
    image::save_buffer_with_format(path, &samples, raster.width, raster.height, color, format)
        .map_err(|e| format!("cannot write `{}`: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raster(width: u32, height: u32, channels: u8, samples: &[u8]) -> Raster {
        Raster {
            width,
            height,
            channels,
            samples: samples.to_vec(),
        }
    }

    fn values(buffer: &Buffer) -> Vec<String> {
        buffer
            .coordinates()
            .map(|c| buffer.get(&c).map_or("-".to_string(), |v| v.to_string()))
            .collect()
    }

    #[test]
    fn samples_scale_to_each_type() {
        let cases = [
            (Type::U8, 200, "200"),
            (Type::U16, 255, "65535"),
            (Type::U16, 1, "257"),
            (Type::I8, 255, "127"),
            (Type::I16, 255, "255"),
            (Type::I32, 7, "7"),
            (Type::U32, 7, "7"),
            (Type::F32, 51, "0.2"),
            (Type::BOOL, 127, "0"),
            (Type::BOOL, 128, "1"),
        ];
        for (ty, sample, expected) in cases {
            assert_eq!(
                sample_to_value(sample, ty, 16).to_string(),
                expected,
                "{ty} from {sample}"
            );
        }
    }

    #[test]
    fn values_map_back_to_eight_bits() {
        let cases = [
            (Type::U8, Value::Int(200), 200),
            (Type::U16, Value::Int(65535), 255),
            (Type::U16, Value::Int(257 * 9), 9),
            (Type::I8, Value::Int(-5), 0),
            (Type::I8, Value::Int(100), 200),
            (Type::I16, Value::Int(-300), 0),
            (Type::I32, Value::Int(1000), 255),
            (Type::F32, Value::Float(0.5), 128),
            (Type::F32, Value::Float(-1.0), 0),
            (Type::F32, Value::Float(7.0), 255),
            (Type::F32, Value::Float(f32::NAN), 0),
            (Type::BOOL, Value::Int(1), 255),
        ];
        for (ty, value, expected) in cases {
            assert_eq!(value_to_sample(value, ty, 16), expected, "{ty} {value}");
        }
    }

    #[test]
    fn every_sample_round_trips_through_each_type() {
        for ty in [
            Type::U8,
            Type::U16,
            Type::I16,
            Type::U32,
            Type::I32,
            Type::F32,
        ] {
            for sample in 0..=255u8 {
                assert_eq!(
                    value_to_sample(sample_to_value(sample, ty, 16), ty, 16),
                    sample,
                    "{ty}"
                );
            }
        }
    }

    #[test]
    fn two_dimensional_inputs_get_luma() {
        // Pure red, green, blue and white pixels.
        let rgb = raster(4, 1, 3, &[255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255]);
        let buffer = to_input_buffer(&rgb, "in", 2, Type::U8, 16).unwrap();
        assert_eq!(values(&buffer), ["76", "150", "29", "255"]);
        // A gray photo is used as is.
        let gray = raster(2, 1, 1, &[3, 250]);
        let buffer = to_input_buffer(&gray, "in", 2, Type::U16, 16).unwrap();
        assert_eq!(
            values(&buffer),
            [(3 * 257).to_string(), (250 * 257).to_string()]
        );
    }

    #[test]
    fn three_dimensional_inputs_are_interleaved_and_gray_expands_to_rgb() {
        let rgba = raster(2, 1, 4, &[1, 2, 3, 4, 5, 6, 7, 8]);
        let buffer = to_input_buffer(&rgba, "photo", 3, Type::U8, 16).unwrap();
        let extents: Vec<i64> = buffer.dims().iter().map(|d| d.extent).collect();
        let strides: Vec<i64> = buffer.dims().iter().map(|d| d.stride).collect();
        assert_eq!(extents, [2, 1, 4]);
        assert_eq!(strides, [4, 8, 1]);
        assert_eq!(buffer.bytes(), &[1, 2, 3, 4, 5, 6, 7, 8]);

        let gray = raster(2, 1, 1, &[10, 20]);
        let buffer = to_input_buffer(&gray, "photo", 3, Type::U8, 16).unwrap();
        assert_eq!(buffer.bytes(), &[10, 10, 10, 20, 20, 20]);
    }

    #[test]
    fn inputs_that_are_not_images_are_user_errors() {
        let gray = raster(1, 1, 1, &[0]);
        let error = to_input_buffer(&gray, "volume", 4, Type::U8, 16).unwrap_err();
        assert!(
            error.contains("input `volume` has 4 dimension(s)"),
            "{error}"
        );
    }

    #[test]
    fn outputs_convert_from_any_layout() {
        // A planar f32 RGB buffer of 2x1 pixels.
        let mut buffer = Buffer::new(Type::F32, &[2, 1, 3]);
        buffer.fill(|c| Value::Float((c[0] * 3 + c[2]) as f32 / 5.0));
        let raster = from_output_buffer(&buffer, "out", 16).unwrap();
        assert_eq!((raster.width, raster.height, raster.channels), (2, 1, 3));
        assert_eq!(raster.samples, [0, 51, 102, 153, 204, 255]);

        let five_channels = Buffer::new(Type::U8, &[1, 1, 5]);
        let error = from_output_buffer(&five_channels, "out", 16).unwrap_err();
        assert!(error.contains("5 channels"), "{error}");
    }

    #[test]
    fn png_round_trip_keeps_every_sample() {
        let original = raster(3, 2, 4, &(0..24).map(|i| i * 10).collect::<Vec<u8>>());
        let path =
            std::env::temp_dir().join(format!("argent-cli-images-{}.png", std::process::id()));
        write(&original, &path).unwrap();
        let decoded = read(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(decoded, original);
    }

    #[test]
    fn bundled_photos_decode_with_their_channel_counts() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../images");
        let chelsea = read(&root.join("chelsea.png")).unwrap();
        assert_eq!(
            (chelsea.width, chelsea.height, chelsea.channels),
            (451, 300, 3)
        );
        let camera = read(&root.join("camera.png")).unwrap();
        assert_eq!(
            (camera.width, camera.height, camera.channels),
            (512, 512, 1)
        );
        let rocket = read(&root.join("rocket.jpg")).unwrap();
        assert_eq!(
            (rocket.width, rocket.height, rocket.channels),
            (640, 427, 3)
        );
    }

    #[test]
    fn twelve_bit_u16_data_round_trips_every_sample() {
        assert_eq!(sample_to_value(255, Type::U16, 12).to_string(), "4095");
        assert_eq!(sample_to_value(0, Type::U16, 12).to_string(), "0");
        for sample in 0..=255u8 {
            let value = sample_to_value(sample, Type::U16, 12);
            assert_eq!(value_to_sample(value, Type::U16, 12), sample);
        }
        // Values past the declared depth clamp to white rather than wrap.
        assert_eq!(value_to_sample(Value::Int(5000), Type::U16, 12), 255);
    }
}
