//! The site's app icons, drawn here: a white pulse on the accent blue, as PNG (the sizes a web
//! app manifest asks for) and SVG. No image crate and no download: a two-colour palette PNG
//! with stored (uncompressed) deflate blocks; the files are served gzip, which compresses them
//! to a few hundred bytes.

/// The accent blue of `site/static/style.css` and the white of the pulse.
const BACKGROUND: [u8; 3] = [0x2f, 0x6f, 0xde];
const PULSE: [u8; 3] = [0xff, 0xff, 0xff];
/// The pulse, in units of the icon's side; inside the middle 80 % (a maskable icon's safe zone).
const POINTS: [(f64, f64); 6] =
    [(0.2, 0.55), (0.37, 0.55), (0.45, 0.32), (0.56, 0.72), (0.64, 0.5), (0.8, 0.5)];
const WIDTH: f64 = 0.06;

/// The icon as SVG.
pub fn svg() -> String {
    let pts: Vec<String> = POINTS.iter().map(|(x, y)| format!("{},{}", x * 100.0, y * 100.0)).collect();
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 100 100\"><rect width=\"100\" height=\"100\" fill=\"#{:02x}{:02x}{:02x}\"/><polyline points=\"{}\" fill=\"none\" stroke=\"#fff\" stroke-width=\"{}\" stroke-linecap=\"round\" stroke-linejoin=\"round\"/></svg>\n",
        BACKGROUND[0],
        BACKGROUND[1],
        BACKGROUND[2],
        pts.join(" "),
        WIDTH * 100.0
    )
}

fn on_pulse(x: f64, y: f64) -> bool {
    POINTS.windows(2).any(|w| {
        let ((ax, ay), (bx, by)) = (w[0], w[1]);
        let (dx, dy) = (bx - ax, by - ay);
        let t = (((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)).clamp(0.0, 1.0);
        let (px, py) = (ax + t * dx - x, ay + t * dy - y);
        (px * px + py * py).sqrt() <= WIDTH / 2.0
    })
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&u32::try_from(data.len()).unwrap_or(u32::MAX).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// The icon as a `side` × `side` PNG (1 bit per pixel, two palette colours).
pub fn png(side: u32) -> Vec<u8> {
    let row_bytes = side.div_ceil(8) as usize;
    let mut raw = Vec::with_capacity((row_bytes + 1) * side as usize);
    for y in 0..side {
        raw.push(0); // filter: none
        let mut row = vec![0u8; row_bytes];
        for x in 0..side {
            let (fx, fy) = ((f64::from(x) + 0.5) / f64::from(side), (f64::from(y) + 0.5) / f64::from(side));
            if on_pulse(fx, fy) {
                row[x as usize / 8] |= 0x80 >> (x % 8);
            }
        }
        raw.extend_from_slice(&row);
    }
    // zlib: header, stored deflate blocks, Adler-32.
    let mut z = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65_535).collect();
    for (i, b) in blocks.iter().enumerate() {
        z.push(u8::from(i + 1 == blocks.len()));
        let len = u16::try_from(b.len()).unwrap_or(u16::MAX);
        z.extend_from_slice(&len.to_le_bytes());
        z.extend_from_slice(&(!len).to_le_bytes());
        z.extend_from_slice(b);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in &raw {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    z.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&side.to_be_bytes());
    ihdr.extend_from_slice(&side.to_be_bytes());
    ihdr.extend_from_slice(&[1, 3, 0, 0, 0]); // bit depth 1, palette, deflate, no filter, no interlace
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"PLTE", &[BACKGROUND, PULSE].concat());
    chunk(&mut out, b"IDAT", &z);
    chunk(&mut out, b"IEND", &[]);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn crc_of_iend_is_the_known_one() {
        assert_eq!(super::crc32(b"IEND"), 0xae42_6082);
    }
}
