// Sizes written for people: "12 B", "1.5 GiB". One rule for every message that names a size: the
// status lines, the disk cache's purge and the refusals of a pin, in the daemon and the CLI alike.

public enum ByteCount {
    /// `bytes` in the largest binary unit that keeps it at 1 or more, to a tenth ("1.5 GiB");
    /// under 1 KiB exactly ("12 B").
    public static func readable(_ bytes: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(bytes) B" }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }
}
