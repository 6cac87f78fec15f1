// The namespace of the DropboxTestSupport tests, so `swift test --filter TestSupportTests` selects
// exactly them: every suite in this folder is nested in it.

import Testing

@Suite enum TestSupportTests {}
