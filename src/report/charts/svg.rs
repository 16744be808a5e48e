//! A small SVG writer for the charts, with the text metrics of the embedded font and the
//! rasteriser that turns an SVG into a PNG.
//!
//! Every mark can carry a `<title>` child: browsers show it as a tooltip when the pointer rests
//! on the mark. Text is set in DejaVu Sans (the `dejavu` crate, compiled into the binary): its
//! advance widths (read with `ttf-parser`) size labels and wrap long lines, and the PNG is the
//! SVG rendered by resvg (usvg's text layout with the same embedded font), so the SVG and the
//! PNG of a chart show the same text. Kerning is left out of the widths (a few per cent at
//! most for these labels).
//!
//! API used, from the crates' documentation: `usvg::Options::fontdb_mut` and
//! `fontdb::Database::{load_font_data, set_sans_serif_family}`, `usvg::Tree::from_str`,
//! `resvg::render(tree, transform, &mut pixmap.as_mut())`, `tiny_skia::Pixmap::{new, fill,
//! data}`; `ttf_parser::Face::{parse, glyph_index, glyph_hor_advance, units_per_em}`.

use std::fmt::Write as _;
use std::sync::OnceLock;

/// The font family the charts name: the embedded DejaVu Sans first, then any sans-serif.
pub(crate) const FONT_FAMILY: &str = "DejaVu Sans, sans-serif";

/// [`crate::report::html::escape`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::report::html::escape`; removed in 0.3.0"
)]
pub fn escape(text: &str) -> String {
    crate::report::html::escape(text)
}

struct Metrics {
    regular: Vec<f32>,
    bold: Vec<f32>,
}

/// Advance widths (in em) of the printable ASCII and Latin-1 characters; others count as `M`.
fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let widths = |data: &[u8]| -> Vec<f32> {
            let Ok(face) = ttf_parser::Face::parse(data, 0) else {
                return vec![0.6; 0x2200];
            };
            let em = f32::from(face.units_per_em().max(1));
            (0u32..0x2200)
                .map(|c| {
                    char::from_u32(c)
                        .and_then(|c| face.glyph_index(c))
                        .and_then(|g| face.glyph_hor_advance(g))
                        .map_or(0.6, |a| f32::from(a) / em)
                })
                .collect()
        };
        Metrics {
            regular: widths(dejavu::sans::regular()),
            bold: widths(dejavu::sans::bold()),
        }
    })
}

/// The width in pixels of `text` set at `size_px` in DejaVu Sans (bold or not).
pub(crate) fn text_width(text: &str, size_px: f64, bold: bool) -> f64 {
    let m = metrics();
    let table = if bold { &m.bold } else { &m.regular };
    let em: f32 = text
        .chars()
        .map(|c| table.get(c as usize).copied().unwrap_or(0.9))
        .sum();
    f64::from(em) * size_px
}

/// `text` broken at spaces into lines no wider than `max_px` (a word wider than that gets a
/// line of its own).
pub(crate) fn wrap(text: &str, size_px: f64, bold: bool, max_px: f64) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let candidate = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if !line.is_empty() && text_width(&candidate, size_px, bold) > max_px {
            lines.push(std::mem::take(&mut line));
            line = word.to_string();
        } else {
            line = candidate;
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Horizontal text anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// The text starts at x.
    Start,
    /// The text is centred on x.
    Middle,
    /// The text ends at x.
    End,
}

/// How a text is set.
#[derive(Debug, Clone, Copy)]
pub struct Font<'a> {
    /// Size, px.
    pub size: f64,
    /// Bold.
    pub bold: bool,
    /// Fill colour (any SVG colour).
    pub color: &'a str,
    /// Horizontal anchor.
    pub anchor: Anchor,
    /// A white outline behind the glyphs, so the text stays legible over lines.
    pub halo: bool,
}

impl<'a> Font<'a> {
    /// Regular black text of `size` px, starting at x.
    pub fn new(size: f64) -> Font<'static> {
        Font {
            size,
            bold: false,
            color: "#222",
            anchor: Anchor::Start,
            halo: false,
        }
    }

    /// The same, bold.
    pub(crate) fn bold(self) -> Self {
        Font { bold: true, ..self }
    }

    /// The same, in `color`.
    pub fn color(self, color: &'a str) -> Font<'a> {
        Font { color, ..self }
    }

    /// The same, with a white outline.
    pub(crate) fn halo(self) -> Self {
        Font { halo: true, ..self }
    }

    /// The same, anchored at `anchor`.
    pub fn anchor(self, anchor: Anchor) -> Self {
        Font { anchor, ..self }
    }
}

/// An SVG document being written.
#[derive(Debug, Clone)]
pub struct Svg {
    width: u32,
    height: u32,
    body: String,
}

fn tooltip(title: Option<&str>) -> String {
    title.map_or(String::new(), |t| {
        format!("<title>{}</title>", crate::report::html::escape(t))
    })
}

fn element(out: &mut String, tag: &str, attrs: &str, title: Option<&str>) {
    match title {
        Some(_) => {
            let _ = writeln!(out, "<{tag} {attrs}>{}</{tag}>", tooltip(title));
        }
        None => {
            let _ = writeln!(out, "<{tag} {attrs}/>");
        }
    }
}

impl Svg {
    /// An empty white canvas of `width` × `height` px.
    pub fn new(width: u32, height: u32) -> Svg {
        let mut svg = Svg {
            width,
            height,
            body: String::new(),
        };
        svg.rect(0.0, 0.0, f64::from(width), f64::from(height), "fill=\"#fff\"", None);
        svg
    }

    /// Width and height, px.
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// A rectangle; `style` is raw attributes (`fill="…" stroke="…"`).
    pub(crate) fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, style: &str, title: Option<&str>) {
        let attrs = format!(
            "x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" {style}",
            w.max(0.0),
            h.max(0.0)
        );
        element(&mut self.body, "rect", &attrs, title);
    }

    /// A line.
    pub fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), style: &str, title: Option<&str>) {
        let attrs = format!("x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" {style}");
        element(&mut self.body, "line", &attrs, title);
    }

    /// A circle.
    pub fn circle(&mut self, (cx, cy): (f64, f64), r: f64, style: &str, title: Option<&str>) {
        let attrs = format!("cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"{r:.1}\" {style}");
        element(&mut self.body, "circle", &attrs, title);
    }

    /// A path (`d` in SVG path syntax).
    pub fn path(&mut self, d: &str, style: &str, title: Option<&str>) {
        let attrs = format!("d=\"{d}\" {style}");
        element(&mut self.body, "path", &attrs, title);
    }

    /// A polyline through `points`.
    pub(crate) fn polyline(&mut self, points: &[(f64, f64)], style: &str, title: Option<&str>) {
        let pts: Vec<String> = points.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let attrs = format!("points=\"{}\" fill=\"none\" {style}", pts.join(" "));
        element(&mut self.body, "polyline", &attrs, title);
    }

    /// One line of text whose baseline is at `y`.
    pub fn text(&mut self, (x, y): (f64, f64), text: &str, font: Font<'_>, title: Option<&str>) {
        let anchor = match font.anchor {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        };
        let weight = if font.bold { " font-weight=\"bold\"" } else { "" };
        let halo = if font.halo {
            " stroke=\"#fff\" stroke-width=\"3\" stroke-linejoin=\"round\" paint-order=\"stroke\""
        } else {
            ""
        };
        let _ = writeln!(
            self.body,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" font-family=\"{FONT_FAMILY}\" font-size=\"{}\"{weight}{halo} \
             fill=\"{}\" text-anchor=\"{anchor}\">{}{}</text>",
            font.size,
            font.color,
            tooltip(title),
            crate::report::html::escape(text)
        );
    }

    /// The document.
    pub fn finish(&self) -> String {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\n{}</svg>\n",
            self.body,
            w = self.width,
            h = self.height
        )
    }
}

/// `svg` rendered by resvg with the embedded DejaVu Sans, as an 8-bit RGB PNG (the `cli`
/// feature's: without it a report's charts are SVG only).
#[cfg(feature = "cli")]
pub fn png(svg: &str) -> Result<Vec<u8>, String> {
    static OPTIONS: OnceLock<resvg::usvg::Options<'static>> = OnceLock::new();
    let options = OPTIONS.get_or_init(|| {
        let mut options = resvg::usvg::Options {
            font_family: "DejaVu Sans".to_string(),
            ..resvg::usvg::Options::default()
        };
        let db = options.fontdb_mut();
        db.load_font_data(dejavu::sans::regular().to_vec());
        db.load_font_data(dejavu::sans::bold().to_vec());
        db.set_sans_serif_family("DejaVu Sans");
        options
    });
    let tree = resvg::usvg::Tree::from_str(svg, options).map_err(|e| format!("rendering a chart: {e}"))?;
    let size = tree.size().to_int_size();
    let (w, h) = (size.width(), size.height());
    let mut pixmap =
        resvg::tiny_skia::Pixmap::new(w, h).ok_or_else(|| format!("rendering a chart: bad size {w}×{h}"))?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
    // Opaque (white background), so the premultiplied RGBA is plain RGBA: drop the alpha.
    let rgb: Vec<u8> = pixmap.data().chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect();
    let mut out = Vec::new();
    {
        let err = |e: png::EncodingError| format!("encoding a PNG: {e}");
        let mut encoder = png::Encoder::new(&mut out, w, h);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::High);
        let mut writer = encoder.write_header().map_err(err)?;
        writer.write_image_data(&rgb).map_err(err)?;
        writer.finish().map_err(err)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_marks_carry_titles() {
        let mut svg = Svg::new(100, 50);
        svg.rect(1.0, 2.0, 3.0, 4.0, "fill=\"red\"", Some("a <b> & \"c\""));
        svg.text((5.0, 20.0), "x < y", Font::new(12.0), None);
        let doc = svg.finish();
        assert!(
            doc.contains("<title>a &lt;b&gt; &amp; &quot;c&quot;</title></rect>"),
            "{doc}"
        );
        assert!(doc.contains(">x &lt; y</text>"), "{doc}");
    }

    /// Decodes an 8-bit RGB PNG into (width, height, grey levels).
    fn grey(png_bytes: &[u8]) -> (u32, u32, Vec<u8>) {
        let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
        let mut reader = decoder.read_info().expect("a PNG header");
        let mut pixels = vec![0; reader.output_buffer_size().expect("a size")];
        let info = reader.next_frame(&mut pixels).expect("PNG pixels");
        assert_eq!(info.color_type, png::ColorType::Rgb);
        let grey = pixels
            .chunks_exact(3)
            .map(|p| ((u16::from(p[0]) + u16::from(p[1]) + u16::from(p[2])) / 3) as u8)
            .collect();
        (info.width, info.height, grey)
    }

    fn label_png(text: &str) -> Vec<u8> {
        let mut svg = Svg::new(320, 40);
        svg.text((10.0, 28.0), text, Font::new(20.0), None);
        png(&svg.finish()).expect("renders")
    }

    /// The rows (y) holding ink (darker than mid-grey) in columns `x0..x1`.
    fn ink_rows(img: &(u32, u32, Vec<u8>), x0: u32, x1: u32) -> Vec<u32> {
        let (w, h, px) = img;
        (0..*h)
            .filter(|&y| (x0..x1.min(*w)).any(|x| px[(y * w + x) as usize] < 128))
            .collect()
    }

    /// The PNG text test: a known label rendered from the SVG matches the reference image
    /// (`tests/data/png-text-reference.png`, checked by eye when it was made), and the glyphs
    /// the old rasteriser garbled come out right: a comma descends below the baseline where a
    /// full stop does not, and a decimal point sits on the baseline, not at mid-height.
    #[test]
    #[cfg(feature = "cli")]
    fn png_text_matches_the_reference_and_punctuation_is_right() {
        let label = "10.082 s, token 269a181c, ok";
        let rendered = label_png(label);
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/png-text-reference.png");
        if std::env::var_os("LOCKSTEP_BLESS").is_some() {
            std::fs::write(&path, &rendered).expect("writes the reference");
        }
        let reference = std::fs::read(&path).expect("the reference image");
        let (a, b) = (grey(&rendered), grey(&reference));
        assert_eq!((a.0, a.1), (b.0, b.1));
        let differing = a.2.iter().zip(&b.2).filter(|(x, y)| x.abs_diff(**y) > 48).count();
        assert!(
            differing <= a.2.len() / 200,
            "{differing} pixels differ from the reference"
        );
        // Real text, not blank: a few hundred dark pixels.
        assert!(a.2.iter().filter(|&&p| p < 128).count() > 300);

        // Baseline at y = 28: the digit "1" ends on it.
        let one = grey(&label_png("1"));
        let baseline = *ink_rows(&one, 0, 40).last().expect("ink");
        assert!((27..=29).contains(&baseline), "baseline {baseline}");
        let comma = grey(&label_png(","));
        let stop = grey(&label_png("."));
        let comma_rows = ink_rows(&comma, 0, 40);
        let stop_rows = ink_rows(&stop, 0, 40);
        assert!(*comma_rows.last().expect("ink") >= baseline + 2, "{comma_rows:?}");
        assert!(*stop_rows.last().expect("ink") <= baseline, "{stop_rows:?}");
        assert!(
            *stop_rows.first().expect("ink") >= baseline - 4,
            "a mid-height dot: {stop_rows:?}"
        );
    }

    #[test]
    fn widths_follow_the_font_and_wrapping_keeps_every_word() {
        assert!(text_width("WWW", 12.0, false) > text_width("iii", 12.0, false) * 2.0);
        assert!(text_width("abc", 12.0, true) > text_width("abc", 12.0, false));
        let text = "client-2 and client-3 both held \"lock\" from 12.035 s to 13.045 s; 1 overlap among 3 grants";
        let lines = wrap(text, 13.0, false, 200.0);
        assert!(lines.len() >= 3, "{lines:?}");
        assert!(lines.iter().all(|l| text_width(l, 13.0, false) <= 200.0));
        assert_eq!(lines.join(" "), text);
    }
}
