// Resume detection (ResumeDetector.swift) with an injected sleep gap: a gap that grows by more
// than the threshold between two checks is a resume, of that many seconds; drift below it is not.

import Foundation
import SystemCalls
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct ResumeDetectorTests {
        @Test func aGrowingGapIsAResumeAndDriftIsNot() {
            let gap = Locked(100.0)
            let detector = ResumeDetector(gap: { gap.value }, threshold: 2)
            #expect(detector.check() == nil, "no time asleep yet")
            gap.value += 0.5
            #expect(detector.check() == nil, "drift below the threshold")
            gap.value += 30
            #expect(detector.check() == 30)
            #expect(detector.check() == nil, "reported once")
            gap.value += 1.9
            gap.value += 1.9
            #expect(abs((detector.check() ?? 0) - 3.8) < 1e-9, "measured from the last check")
        }

        @Test func theSystemGapIsNotNegativeAndTheJumpFileAddsToIt() throws {
            #expect(SystemClock.suspendedSeconds() > -0.01, "the two clocks are read one after the other")
            let path = "/tmp/dropboxfs-resume-test-\(UInt64.random(in: 0...UInt64.max))"
            let withFile = ResumeDetector.gap(withJumpFile: path)
            let before = withFile()
            #expect(abs(before - SystemClock.suspendedSeconds()) < 1, "no file: nothing added")
            try "45\n".write(toFile: path, atomically: true, encoding: .utf8)
            defer { unlink(path) }
            #expect(abs(withFile() - before - 45) < 1)
        }
    }
}
