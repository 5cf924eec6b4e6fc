//! Images drawn from seeds: what PNG tools meet in practice (a photo with
//! smooth regions and grain, a screenshot of flat panels and text, a
//! poster of few colours, a scanned page in grey), and distortions of a
//! photo for image comparison. Written with the `png` crate at its fast
//! setting, as a camera pipeline or a screenshot tool would, so a
//! recompressor has work to do.

use std::fs;
use std::io::{self, BufWriter};
use std::path::Path;

use super::inputs::Rng;

/// Pixel layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Color {
    Gray,
    Rgb,
    Rgba,
}

impl Color {
    fn channels(self) -> usize {
        match self {
            Color::Gray => 1,
            Color::Rgb => 3,
            Color::Rgba => 4,
        }
    }
}

/// An 8-bit image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub color: Color,
    /// Rows top to bottom, channels interleaved.
    pub data: Vec<u8>,
}

impl Image {
    fn new(width: u32, height: u32, color: Color) -> Image {
        Image {
            width,
            height,
            color,
            data: vec![0; width as usize * height as usize * color.channels()],
        }
    }

    fn pixel_mut(&mut self, x: u32, y: u32) -> &mut [u8] {
        let channels = self.color.channels();
        let at = (y as usize * self.width as usize + x as usize) * channels;
        &mut self.data[at..at + channels]
    }

    fn fill_rect(&mut self, x0: u32, y0: u32, w: u32, h: u32, value: &[u8]) {
        for y in y0..(y0 + h).min(self.height) {
            for x in x0..(x0 + w).min(self.width) {
                self.pixel_mut(x, y).copy_from_slice(value);
            }
        }
    }
}

/// The kinds of picture a recompressor gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// Landscape photo, RGB: sky gradient, fractal terrain, sensor grain.
    Photo,
    /// Desktop screenshot, RGBA (opaque): panels, text, a thumbnail.
    Screenshot,
    /// Poster, RGB in a dozen flat colours.
    Poster,
    /// Scanned text page, grey.
    Scan,
}

/// Every subject, in the order of the input's files.
pub const SUBJECTS: [Subject; 4] = [
    Subject::Photo,
    Subject::Screenshot,
    Subject::Poster,
    Subject::Scan,
];

impl Subject {
    /// The file's stem.
    pub fn name(self) -> &'static str {
        match self {
            Subject::Photo => "photo",
            Subject::Screenshot => "screenshot",
            Subject::Poster => "poster",
            Subject::Scan => "scan",
        }
    }

    /// Full size, pixels.
    pub fn size(self) -> (u32, u32) {
        match self {
            Subject::Photo => (1600, 1200),
            Subject::Screenshot => (1920, 1080),
            Subject::Poster => (1024, 1024),
            Subject::Scan => (1275, 1650),
        }
    }

    /// Draws the subject at `width` x `height` from `seed`.
    pub fn draw(self, width: u32, height: u32, seed: u64) -> Image {
        match self {
            Subject::Photo => photo(width, height, seed),
            Subject::Screenshot => screenshot(width, height, seed),
            Subject::Poster => poster(width, height, seed),
            Subject::Scan => scan(width, height, seed),
        }
    }
}

/// What a photo may have gone through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distortion {
    /// Grain added.
    Noise,
    /// A 5x5 box blur.
    Blur,
    /// Four bits per channel.
    Posterize,
    /// 8x8 block averages blended in, like a low-quality JPEG.
    Blocks,
}

/// Every distortion, in the order of the input's files.
pub const DISTORTIONS: [Distortion; 4] = [
    Distortion::Noise,
    Distortion::Blur,
    Distortion::Posterize,
    Distortion::Blocks,
];

impl Distortion {
    /// The file's stem.
    pub fn name(self) -> &'static str {
        match self {
            Distortion::Noise => "noise",
            Distortion::Blur => "blur",
            Distortion::Posterize => "posterize",
            Distortion::Blocks => "blocks",
        }
    }

    /// `image` distorted (noise drawn from `seed`).
    pub fn apply(self, image: &Image, seed: u64) -> Image {
        let mut out = image.clone();
        let channels = image.color.channels();
        let (w, h) = (image.width as usize, image.height as usize);
        match self {
            Distortion::Noise => {
                let mut rng = Rng::new(seed);
                for value in &mut out.data {
                    let delta = rng.below(25) as i32 - 12;
                    *value = (i32::from(*value) + delta).clamp(0, 255) as u8;
                }
            }
            Distortion::Blur => {
                for y in 0..h {
                    for x in 0..w {
                        for c in 0..channels {
                            let (mut sum, mut count) = (0u32, 0u32);
                            for yy in y.saturating_sub(2)..(y + 3).min(h) {
                                for xx in x.saturating_sub(2)..(x + 3).min(w) {
                                    sum += u32::from(image.data[(yy * w + xx) * channels + c]);
                                    count += 1;
                                }
                            }
                            out.data[(y * w + x) * channels + c] = (sum / count) as u8;
                        }
                    }
                }
            }
            Distortion::Posterize => {
                for value in &mut out.data {
                    *value = (*value & 0xf0) | 0x08;
                }
            }
            Distortion::Blocks => {
                for by in (0..h).step_by(8) {
                    for bx in (0..w).step_by(8) {
                        for c in 0..channels {
                            let (mut sum, mut count) = (0u32, 0u32);
                            for y in by..(by + 8).min(h) {
                                for x in bx..(bx + 8).min(w) {
                                    sum += u32::from(image.data[(y * w + x) * channels + c]);
                                    count += 1;
                                }
                            }
                            let mean = sum / count;
                            for y in by..(by + 8).min(h) {
                                for x in bx..(bx + 8).min(w) {
                                    let at = (y * w + x) * channels + c;
                                    out.data[at] = ((u32::from(image.data[at]) + mean) / 2) as u8;
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

/// Writes `image` as a PNG (fast compression, adaptive filters).
pub fn write_png(path: &Path, image: &Image) -> io::Result<()> {
    let file = BufWriter::new(fs::File::create(path)?);
    let mut encoder = png::Encoder::new(file, image.width, image.height);
    encoder.set_color(match image.color {
        Color::Gray => png::ColorType::Grayscale,
        Color::Rgb => png::ColorType::Rgb,
        Color::Rgba => png::ColorType::Rgba,
    });
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    let mut writer = encoder.write_header().map_err(io::Error::other)?;
    writer
        .write_image_data(&image.data)
        .map_err(io::Error::other)?;
    writer.finish().map_err(io::Error::other)
}

/// Smooth value noise in [0, 1): `octaves` layers of bilinearly
/// interpolated lattice values, each twice as fine and half as strong.
fn fractal_noise(x: f64, y: f64, seed: u64, octaves: u32) -> f64 {
    let (mut sum, mut amplitude, mut frequency, mut total) = (0.0, 1.0, 1.0, 0.0);
    for octave in 0..octaves {
        sum += amplitude * value_noise(x * frequency, y * frequency, seed ^ u64::from(octave));
        total += amplitude;
        amplitude *= 0.5;
        frequency *= 2.0;
    }
    sum / total
}

fn value_noise(x: f64, y: f64, seed: u64) -> f64 {
    let (x0, y0) = (x.floor(), y.floor());
    let (fx, fy) = (smooth(x - x0), smooth(y - y0));
    let corner = |dx: i64, dy: i64| lattice(x0 as i64 + dx, y0 as i64 + dy, seed);
    let top = corner(0, 0) * (1.0 - fx) + corner(1, 0) * fx;
    let bottom = corner(0, 1) * (1.0 - fx) + corner(1, 1) * fx;
    top * (1.0 - fy) + bottom * fy
}

fn smooth(t: f64) -> f64 {
    t * t * (3.0 - 2.0 * t)
}

/// A lattice point's value in [0, 1), hashed from its coordinates.
fn lattice(x: i64, y: i64, seed: u64) -> f64 {
    let mut rng = Rng::new(seed ^ (x as u64).wrapping_mul(0x9e37_79b9) ^ (y as u64) << 32);
    rng.unit()
}

fn to_byte(value: f64) -> u8 {
    (value * 255.0).round().clamp(0.0, 255.0) as u8
}

fn photo(width: u32, height: u32, seed: u64) -> Image {
    let mut image = Image::new(width, height, Color::Rgb);
    let mut grain = Rng::new(seed ^ 0x6a);
    let scale = 6.0 / f64::from(width.max(1));
    for y in 0..height {
        let v = f64::from(y) / f64::from(height.max(1));
        for x in 0..width {
            let (fx, fy) = (f64::from(x) * scale, f64::from(y) * scale);
            let ridge = 0.45 + 0.25 * fractal_noise(fx * 0.5, 0.0, seed, 4);
            let terrain = fractal_noise(fx, fy, seed ^ 0x1, 6);
            let rgb = if v < ridge {
                // Sky: a gradient with soft clouds.
                let cloud = fractal_noise(fx * 0.7, fy * 2.0, seed ^ 0x2, 5).powi(3);
                [
                    0.35 + 0.4 * v + 0.6 * cloud,
                    0.55 + 0.3 * v + 0.5 * cloud,
                    0.85 + 0.1 * v + 0.3 * cloud,
                ]
            } else {
                let shade = 0.3 + 0.7 * terrain;
                [0.25 * shade + 0.1, 0.45 * shade + 0.05, 0.2 * shade]
            };
            let pixel = image.pixel_mut(x, y);
            for (channel, value) in pixel.iter_mut().zip(rgb) {
                let noisy = value + (grain.unit() - 0.5) * 0.03;
                *channel = to_byte(noisy);
            }
        }
    }
    image
}

fn screenshot(width: u32, height: u32, seed: u64) -> Image {
    let mut rng = Rng::new(seed);
    let mut image = Image::new(width, height, Color::Rgba);
    image.fill_rect(0, 0, width, height, &[236, 238, 242, 255]);
    // Title bar and a sidebar.
    let bar = (height / 30).max(2);
    image.fill_rect(0, 0, width, bar, &[52, 58, 70, 255]);
    let sidebar = width / 6;
    image.fill_rect(0, bar, sidebar, height, &[222, 226, 232, 255]);
    // Text: lines of glyph-sized blocks, in the sidebar and the main pane.
    let glyph_h = (height / 90).max(2);
    let glyph_w = (glyph_h * 3 / 5).max(1);
    let mut y = bar + glyph_h * 2;
    while y + glyph_h < height {
        let (x_start, x_end) = if rng.below(4) == 0 {
            (glyph_w * 2, sidebar - glyph_w * 2)
        } else {
            (sidebar + glyph_w * 4, width - glyph_w * 4)
        };
        let mut x = x_start;
        let line_end = x_start + (rng.unit() * f64::from(x_end - x_start)) as u32;
        while x + glyph_w < line_end {
            if rng.below(6) != 0 {
                // One glyph: a few strokes in a glyph box.
                for _ in 0..3 {
                    let sx = x + rng.below(u64::from(glyph_w)) as u32;
                    let sy = y + rng.below(u64::from(glyph_h)) as u32;
                    image.fill_rect(sx, sy, 1, glyph_h / 2 + 1, &[30, 32, 38, 255]);
                }
            }
            x += glyph_w + 1;
        }
        y += glyph_h * 2;
        if rng.below(12) == 0 && y + height / 5 < height {
            // A thumbnail of a photo in the pane.
            let (tw, th) = (width / 4, height / 6);
            let thumb = photo(tw, th, rng.next_u64());
            for ty in 0..th {
                for tx in 0..tw {
                    let at = ((ty * tw + tx) * 3) as usize;
                    let rgb = &thumb.data[at..at + 3];
                    let px = image.pixel_mut(sidebar + glyph_w * 4 + tx, y + ty);
                    px[..3].copy_from_slice(rgb);
                }
            }
            y += th + glyph_h;
        }
    }
    image
}

fn poster(width: u32, height: u32, seed: u64) -> Image {
    const PALETTE: [[u8; 3]; 12] = [
        [239, 71, 111],
        [255, 209, 102],
        [6, 214, 160],
        [17, 138, 178],
        [7, 59, 76],
        [250, 250, 245],
        [38, 70, 83],
        [42, 157, 143],
        [233, 196, 106],
        [244, 162, 97],
        [231, 111, 81],
        [20, 20, 24],
    ];
    let mut image = Image::new(width, height, Color::Rgb);
    let scale = 4.0 / f64::from(width.max(1));
    for y in 0..height {
        for x in 0..width {
            let n = fractal_noise(f64::from(x) * scale, f64::from(y) * scale, seed, 3);
            let index = ((n * 1.6 - 0.3).clamp(0.0, 0.999) * 8.0) as usize;
            image.pixel_mut(x, y).copy_from_slice(&PALETTE[index]);
        }
    }
    let mut rng = Rng::new(seed ^ 0x99);
    for _ in 0..24 {
        let (cx, cy) = (rng.below(u64::from(width)), rng.below(u64::from(height)));
        let radius = 4 + rng.below(u64::from(width / 8).max(1));
        let color = *rng.pick(&PALETTE[8..]);
        for y in cy.saturating_sub(radius)..(cy + radius).min(u64::from(height)) {
            for x in cx.saturating_sub(radius)..(cx + radius).min(u64::from(width)) {
                let (dx, dy) = (x.abs_diff(cx), y.abs_diff(cy));
                if dx * dx + dy * dy <= radius * radius {
                    image.pixel_mut(x as u32, y as u32).copy_from_slice(&color);
                }
            }
        }
    }
    image
}

fn scan(width: u32, height: u32, seed: u64) -> Image {
    let mut rng = Rng::new(seed);
    let mut image = Image::new(width, height, Color::Gray);
    let (cx, cy) = (f64::from(width) / 2.0, f64::from(height) / 2.0);
    for y in 0..height {
        for x in 0..width {
            // Paper: near white, darker towards the corners, with grain.
            let d = ((f64::from(x) - cx).powi(2) + (f64::from(y) - cy).powi(2)).sqrt()
                / (cx * cx + cy * cy).sqrt();
            let paper = 0.95 - 0.08 * d * d + (rng.unit() - 0.5) * 0.04;
            image.pixel_mut(x, y)[0] = to_byte(paper);
        }
    }
    let margin = width / 10;
    let glyph_h = (height / 110).max(2);
    let mut y = margin;
    while y + glyph_h < height - margin {
        let mut x = margin;
        let end = width - margin - rng.below(u64::from(width / 4)) as u32;
        while x + glyph_h < end {
            let word = 2 + rng.below(8) as u32;
            for _ in 0..word {
                let ink = 20 + rng.below(40) as u8;
                let gw = glyph_h * 3 / 5;
                image.fill_rect(x, y + rng.below(2) as u32, gw.max(1), glyph_h, &[ink]);
                x += gw + 2;
            }
            x += glyph_h;
        }
        y += glyph_h * 2;
        if rng.below(25) == 0 {
            y += glyph_h * 3;
        }
    }
    image
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_are_drawn_from_their_seed_alone() {
        for subject in SUBJECTS {
            let a = subject.draw(64, 48, 3);
            assert_eq!(a, subject.draw(64, 48, 3), "{subject:?}");
            assert_ne!(a.data, subject.draw(64, 48, 4).data, "{subject:?}");
            assert_eq!(a.data.len(), 64 * 48 * a.color.channels());
        }
        let photo = Subject::Photo.draw(40, 30, 1);
        for distortion in DISTORTIONS {
            let distorted = distortion.apply(&photo, 2);
            assert_eq!(distorted.data.len(), photo.data.len());
            assert_ne!(distorted.data, photo.data, "{distortion:?}");
        }
    }
}
