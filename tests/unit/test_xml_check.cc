// Unit tests of src/topo/xml_check.c: the strict well-formedness check that stands
// before hwloc's XML importer. Every real XML file of tests/data/topologies and of the
// shared topology collection passes; inputs that crash hwloc 2.9's minimalistic
// importer, truncations of real files and one input per rule are refused with the
// line and cause.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "topo/xml_check.h"
#include "unit_util.hh"
#include "util/log.h"

namespace {

using mxh_test::LogCapture;
using mxh_test::QuietStderr;
using mxh_test::TempFile;
using mxh_test::read_text;

// The *.xml files of @dir (sorted), empty when the folder does not exist.
std::vector<std::string> xml_files(const std::string &dir)
{
    std::vector<std::string> out;
    DIR *d = opendir(dir.c_str());
    if (d == nullptr)
        return out;
    while (struct dirent *e = readdir(d)) {
        std::string n = e->d_name;
        if (n.size() > 4 && n.compare(n.size() - 4, 4, ".xml") == 0)
            out.push_back(dir + "/" + n);
    }
    closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

// The name of the root element of a well-formed file: "topology" (hwloc) or "system" (NCCL).
std::string root_of(const std::string &text)
{
    for (const char *root : {"topology", "system"})
        if (text.find(std::string("<") + root + ">") != std::string::npos ||
            text.find(std::string("<") + root + " ") != std::string::npos)
            return root;
    return "";
}

// Checks @text against root <topology>: the status, and the one error when it fails.
mxh_status_t check(const std::string &text, std::string *err = nullptr, const char *root = "topology")
{
    LogCapture log;
    QuietStderr quiet;
    mxh_status_t st = mxh_xml_check(text.data(), text.size(), "doc.xml", root);
    if (st != MXH_OK) {
        EXPECT_EQ(log.errors().size(), 1u) << text.substr(0, 80);
        if (err != nullptr && !log.errors().empty())
            *err = log.errors()[0];
    } else {
        EXPECT_TRUE(log.errors().empty()) << text.substr(0, 80);
    }
    return st;
}

const char *const kHead = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                          "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n";

}  // namespace

// Every XML file of the fixtures and of the shared collection is well-formed; the hwloc
// exports pass with root <topology>, the NCCL files with root <system>.
TEST(XmlCheck, EveryRealFileIsWellFormed)
{
    int hwloc = 0, nccl = 0;
    std::vector<std::string> files = xml_files(mxh_test::test_data("topologies"));
    const char *env = getenv("MXH_SHARED_TOPODIR"); // a checkout elsewhere than beside shared/
    const std::string shared_dir = env && *env ? env : MXH_SHARED_TOPODIR;
    std::vector<std::string> shared = xml_files(shared_dir);
    files.insert(files.end(), shared.begin(), shared.end());
    for (const auto &path : files) {
        SCOPED_TRACE(path);
        std::string text = read_text(path);
        std::string root = root_of(text);
        ASSERT_FALSE(root.empty());
        EXPECT_EQ(check(text, nullptr, root.c_str()), MXH_OK);
        if (root == "topology") {
            hwloc++;
            char *got = nullptr;
            size_t len = 0;
            ASSERT_EQ(mxh_xml_read_checked(path.c_str(), "hwloc XML", "topology", MXH_XML_HWLOC, &got, &len), MXH_OK);
            EXPECT_EQ(std::string(got, len), text);
            EXPECT_EQ(got[len], '\0');
            free(got);
        } else {
            nccl++;
        }
    }
    // tests/data/topologies: 6 hwloc exports (README.hwloc.md) and 3 NCCL files
    EXPECT_GE(hwloc, 6);
    EXPECT_GE(nccl, 3);
    if (shared.empty())
        std::cout << "[ note     ] " << shared_dir << " not found: fixtures only\n";
    else
        EXPECT_EQ(hwloc + nccl, 18);
}

// Inputs on which hwloc 2.9's minimalistic importer dereferences NULL
// (strchr(buffer, '>') + 1 after sscanf matched "<topology version=\"%u.%u\""):
// test_machine_hwloc.cc shows hwloc dying on the first; all are refused here.
TEST(XmlCheck, HwlocCrashersAreRefused)
{
    const struct {
        std::string text;
        int line;
        const char *cause;
    } cases[] = {
        {"<topology version=\"2.0\"", 1, "end of file inside the start tag of <topology>"},
        {"<topology version=\"2.0\" <object a=\"\"", 1, "expected an attribute name"},
        {"<?xml version=\"1.0\"?>\n<topology version=\"2.0", 2,
         "end of file inside the value of attribute 'version' of <topology>"},
        {"<topology version=\"2.0\"\n<object type=\"Machine\"/", 2, "expected an attribute name"},
        {std::string(kHead) + "<topology version=\"2.1\"", 3, "end of file inside the start tag"},
    };
    for (const auto &c : cases) {
        std::string err;
        EXPECT_EQ(check(c.text, &err), MXH_ERR_PARSE) << c.text;
        EXPECT_EQ(err.rfind("doc.xml:" + std::to_string(c.line) + ": ", 0), 0u) << err;
        EXPECT_NE(err.find(c.cause), std::string::npos) << err;
    }
}

// hwloc's rules on top of XML's (mxh_xml_check_hwloc): what its minimalistic importer
// misreads silently, and the sizes it allocates by. Each case is well-formed XML.
TEST(XmlCheck, HwlocRulesNameTheLineAndCause)
{
    const std::string h = std::string(kHead) + "<topology version=\"2.0\">\n"; // 3 lines
    const std::string end = "\n</topology>";
    const struct {
        std::string body;
        const char *cause;
    } cases[] = {
        {"<info name='a' value=\"b\"/>", "is in single quotes (hwloc reads double quotes only)"},
        {"<info name=\"a>b\" value=\"c\"/>", "'>' in the value of attribute 'name' of <info>"},
        {"<info name=\"&apos;\" value=\"c\"/>", "reference in the value of attribute 'name' of <info> that hwloc does not read"},
        {"<info Name=\"a\" value=\"c\"/>", "attribute name 'Name' of <info> has 'N'"},
        {"<info name =\"a\" value=\"c\"/>", "expected '=' right after attribute 'name' of <info>"},
        {"<object type=\"Machine\" cpuset=\"0x1\"/>", "<object> with cpuset but no complete_cpuset (hwloc needs both)"},
        {"<object type=\"Machine\" complete_nodeset=\"0x1\"/>", "<object> with complete_nodeset but no nodeset"},
        {"<object type=\"NUMANode\" os_index=\"99999999999999999999\"/>",
         "os_index=\"99999999999999999999\" of a NUMANode is not a number of at most 65535"},
        {"<object type=\"PU\" os_index=\"65536\"/>", "os_index=\"65536\" of a PU is not a number of at most 65535"},
        {"<object os_index=\"-1\" type=\"PU\"/>", "os_index=\"-1\" of a PU"},
        {"<object type=\"PU\" yos_index=\"24\"/>", "a PU without os_index (hwloc takes 2^32 - 1"},
        {"<distances2 type=\"NUMANode\" nbobjs=\"100000\"/>",
         "nbobjs=\"100000\" of <distances2> is not a number of at most 4096"},
    };
    for (const auto &c : cases) {
        const std::string text = h + c.body + end;
        EXPECT_EQ(check(text), MXH_OK) << "plain XML accepts " << c.body;
        LogCapture log;
        QuietStderr quiet;
        EXPECT_EQ(mxh_xml_check_hwloc(text.data(), text.size(), "doc.xml"), MXH_ERR_PARSE) << c.body;
        ASSERT_EQ(log.errors().size(), 1u) << c.body;
        EXPECT_EQ(log.errors()[0].rfind("doc.xml:4: ", 0), 0u) << log.errors()[0];
        EXPECT_NE(log.errors()[0].find(c.cause), std::string::npos) << log.errors()[0];
    }
    // what hwloc itself writes passes: PCI os_index beyond 65535, the largest sizes allowed
    const std::string ok = h + "<object type=\"PCIDev\" os_index=\"7344128\"/>\n"
                           "<object type=\"PU\" os_index=\"65535\" cpuset=\"0x1\" complete_cpuset=\"0x1\"/>\n"
                           "<distances2 type=\"NUMANode\" nbobjs=\"4096\" name=\"a &amp; &lt;b&gt; &#10;\"/>" + end;
    LogCapture log;
    EXPECT_EQ(mxh_xml_check_hwloc(ok.data(), ok.size(), "doc.xml"), MXH_OK);
    EXPECT_TRUE(log.errors().empty());
}

// One input per rule: the line and the cause of the message.
TEST(XmlCheck, EachRuleNamesTheLineAndCause)
{
    const std::string h = kHead; // 2 lines
    const struct {
        std::string text;
        int line;
        const char *cause;
    } cases[] = {
        {"", 1, "no root element (empty document)"},
        {"   \n  ", 2, "no root element"},
        {"text", 1, "expected the root element <topology> (found 't')"},
        {h + "<system/>", 3, "the root element is <system>, expected <topology>"},
        {"<!DOCTYPE system>\n<topology/>", 1, "<!DOCTYPE system> does not name the root"},
        {"<!DOCTYPE topology [<!ENTITY x \"y\">]>\n<topology/>", 1, "internal DTD subset"},
        {"<!DOCTYPE topology>\n<!DOCTYPE topology>\n<topology/>", 2, "second <!DOCTYPE>"},
        {h + "<topology>\n<object>\n</topology>", 5, "</topology> does not close <object> opened at line 4"},
        {h + "<topology>\n<object>\n", 5, "end of file inside <object> opened at line 4 (truncated?)"},
        {h + "<topology>", 3, "end of file inside <topology> opened at line 3"},
        {h + "<topology></topology>\n<topology/>", 4, "markup after the root element <topology>"},
        {h + "<topology/>\nx", 4, "text after the root element"},
        {h + "<topology a=1/>", 3, "expected a quoted value for attribute 'a' of <topology> (found '1')"},
        {h + "<topology a/>", 3, "expected '=' after attribute 'a' of <topology> (found '/')"},
        {h + "<topology a=\"1\"b=\"2\"/>", 3, "expected a space, '>' or '/>'"},
        {h + "<topology a=\"1\" a='2'/>", 3, "attribute 'a' given twice in <topology>"},
        {h + "<topology a=\"x<y\"/>", 3, "'<' in the value of attribute 'a' of <topology> (write &lt;)"},
        {h + "<topology a=\"&nbsp;\"/>", 3, "unknown entity '&nbsp;'"},
        {h + "<topology a=\"AT&T\"/>", 3, "'&' not followed by an entity"},
        {h + "<topology a=\"&#0;\"/>", 3, "'&#0;' in the value of attribute 'a' of <topology> is not an XML character"},
        {h + "<topology a=\"&#xD800;\"/>", 3, "is not an XML character"},
        {h + "<topology a=\"&#x110000;\"/>", 3, "is not an XML character"},
        {h + "<topology a=\"&#12a;\"/>", 3, "bad character reference '&#12a;'"},
        {h + "<topology>&#;</topology>", 3, "unknown entity '&#;'"},
        {h + "<topology>]]></topology>", 3, "']]>' in the text of <topology>"},
        {h + "<topology><!-- a -- b --></topology>", 3, "'--' inside a comment"},
        {h + "<topology><!-- a", 3, "end of file inside a comment (no '--')"},
        {h + "<topology><![CDATA[ x ]]", 3, "end of file inside a CDATA section (no ']]>')"},
        {h + "<topology><?pi x", 3, "end of file inside a processing instruction (no '?>')"},
        {h + "<topology><?xml version=\"1.0\"?></topology>", 3, "XML declaration '<?xml' not at the start"},
        {h + "<topology><!ELEMENT x ANY></topology>", 3, "markup '<!' inside <topology>"},
        {h + "<topology>\n<1a/></topology>", 4, "expected an element name after '<' (found '1')"},
        {h + "<topology>\x01</topology>", 3, "control character 0x01 in the text of <topology>"},
        {h + "<topology>" + std::string(1, '\0') + "</topology>", 3, "NUL byte in the text of <topology>"},
        {h + "<topology a=\"\xc3\"/>", 3, "invalid UTF-8 (byte 0xc3)"},
        {h + "<topology a=\"\xc0\x80\"/>", 3, "invalid UTF-8 (byte 0xc0)"},
        {h + "<topology a=\"\xed\xa0\x80\"/>", 3, "invalid UTF-8 (byte 0xed)"},
        {"<?xml version=\"1.0\" encoding=\"UTF-16\"?><topology/>", 1, "encoding 'UTF-16' is not supported"},
        {"<?xml version=\"2.0\"?><topology/>", 1, "XML version '2.0' is not 1.x"},
        {"<?xml encoding=\"UTF-8\"?><topology/>", 1, "unexpected 'encoding' in the XML declaration"},
        {"<?xml version=\"1.0\" standalone=\"maybe\"?><topology/>", 1, "standalone must be"},
        {"<?xml version=\"1.0\"", 1, "end of file inside the XML declaration"},
        {"<?xml version=\"1.0\" encoding=\"US-ASCII\"?><topology a=\"\xe9\"/>", 1,
         "byte 0xe9 in the value of attribute 'a' of <topology> of a US-ASCII document"},
        {h + "<topology></topology >x", 3, "text after the root element <topology> (line 3) ended"},
        {h + "<topology></topology", 3, "expected '>' to end </topology> (found end of file)"},
    };
    for (const auto &c : cases) {
        std::string err;
        EXPECT_EQ(check(c.text, &err), MXH_ERR_PARSE) << c.text;
        EXPECT_EQ(err.rfind("doc.xml:" + std::to_string(c.line) + ": ", 0), 0u) << c.text << "\n" << err;
        EXPECT_NE(err.find(c.cause), std::string::npos) << c.text << "\n" << err;
    }
}

// What XML allows and real files use is accepted.
TEST(XmlCheck, ValidXmlIsAccepted)
{
    const std::string ok[] = {
        "<topology/>",
        "\xef\xbb\xbf<topology/>",
        "<?xml version='1.0' encoding='iso-8859-1' standalone='yes' ?>\n<topology a=\"caf\xe9\"/>",
        "<?xml version=\"1.1\"?><topology a='say \"hi\"' b=\"it's\"/>",
        "<!-- c --><?pi data?>\n<!DOCTYPE topology PUBLIC \"-//x//EN\" \"t.dtd\" >\n<topology/>\n<!-- after -->\n",
        "<topology version=\"2.0\">\n  <object type=\"Machine\" name=\"a&amp;b &lt; &gt; &quot; &apos; &#10;&#x41;&#x1F600;\">"
        "<info name=\"x\" value=\"caf\xc3\xa9 \xf0\x9f\x98\x80\"/>text <![CDATA[ <not markup> & ]]> <?pi?></object >\n"
        "</topology>\n",
    };
    for (const auto &t : ok)
        EXPECT_EQ(check(t), MXH_OK) << t;

    // nesting: MXH_XML_CHECK_MAX_DEPTH elements, root included, are fine; one more is not
    std::string deep = "<topology>", tail = "</topology>";
    for (int i = 1; i < MXH_XML_CHECK_MAX_DEPTH; i++) {
        deep += "<o>";
        tail = "</o>" + tail;
    }
    EXPECT_EQ(check(deep + tail), MXH_OK);
    std::string err;
    EXPECT_EQ(check(deep + "<o></o>" + tail, &err), MXH_ERR_PARSE);
    EXPECT_NE(err.find("elements nested deeper than 256"), std::string::npos) << err;

    // attributes: MXH_XML_CHECK_MAX_ATTRS per element
    std::string attrs;
    for (int i = 0; i < MXH_XML_CHECK_MAX_ATTRS; i++)
        attrs += " a" + std::to_string(i) + "=\"\"";
    EXPECT_EQ(check("<topology" + attrs + "/>"), MXH_OK);
    EXPECT_EQ(check("<topology" + attrs + " z=\"\"/>", &err), MXH_ERR_PARSE);
    EXPECT_NE(err.find("more than 512 attributes in <topology>"), std::string::npos) << err;

    // no root name asked: any root
    EXPECT_EQ(check("<system/>", nullptr, nullptr), MXH_OK);
}

// Every cut of a real export before the end of its root element is refused: hwloc never
// reads a truncated file. Every prefix of the first 4 KiB, then 400 cuts over the file.
TEST(XmlCheck, EveryTruncationOfARealExportIsRefused)
{
    for (const char *name : {"cts1-pascal.xml", "coral-ea-hwloc1.xml", "power8gpudistances.xml"}) {
        SCOPED_TRACE(name);
        const std::string text = read_text(mxh_test::test_data(std::string("topologies/") + name));
        const size_t end = text.rfind("</topology>") + strlen("</topology>");
        ASSERT_GT(end, 4096u);
        std::vector<size_t> cuts;
        for (size_t n = 0; n < 4096; n++)
            cuts.push_back(n);
        for (size_t k = 0; k < 400; k++)
            cuts.push_back(4096 + (end - 4096) * k / 400);
        cuts.push_back(end - 1);
        int refused = 0;
        LogCapture log;
        QuietStderr quiet;
        for (size_t n : cuts)
            refused += mxh_xml_check(text.data(), n, name, "topology") == MXH_ERR_PARSE;
        EXPECT_EQ(refused, (int)cuts.size());
        EXPECT_EQ(mxh_xml_check(text.data(), end, name, "topology"), MXH_OK);
        EXPECT_EQ(mxh_xml_check(text.data(), text.size(), name, "topology"), MXH_OK);
    }
}

// The file form: I/O errors are MXH_ERR_IO naming the path, the size bound is checked
// before reading, a malformed file is "PATH:LINE: malformed WHAT: cause".
TEST(XmlCheck, FileErrors)
{
    char *text = reinterpret_cast<char *>(1);
    size_t len = 7;
    {
        LogCapture log;
        QuietStderr quiet;
        EXPECT_EQ(mxh_xml_read_checked("/nonexistent/m.xml", "hwloc XML", "topology", MXH_XML_HWLOC, &text, &len),
                  MXH_ERR_IO);
        EXPECT_EQ(text, nullptr);
        EXPECT_EQ(len, 0u);
        ASSERT_EQ(log.errors().size(), 1u);
        EXPECT_EQ(log.errors()[0], "cannot open hwloc XML /nonexistent/m.xml: No such file or directory");
    }
    {
        LogCapture log;
        QuietStderr quiet;
        std::string dir = mxh_test::test_data("topologies");
        EXPECT_EQ(mxh_xml_read_checked(dir.c_str(), "hwloc XML", "topology", MXH_XML_HWLOC, &text, &len), MXH_ERR_IO);
        ASSERT_EQ(log.errors().size(), 1u);
        EXPECT_NE(log.errors()[0].find(dir), std::string::npos) << log.errors()[0];
        EXPECT_NE(log.errors()[0].find("Is a directory"), std::string::npos) << log.errors()[0];
    }
    {
        TempFile big;
        ASSERT_EQ(truncate(big.path().c_str(), (off_t)MXH_XML_CHECK_MAX_BYTES + 1), 0);
        LogCapture log;
        QuietStderr quiet;
        EXPECT_EQ(mxh_xml_read_checked(big.path().c_str(), "hwloc XML", "topology", MXH_XML_HWLOC, &text, &len),
                  MXH_ERR_PARSE);
        ASSERT_EQ(log.errors().size(), 1u);
        EXPECT_NE(log.errors()[0].find("67108865 bytes, more than the limit of 67108864"),
                  std::string::npos) << log.errors()[0];
    }
    {
        TempFile f("<?xml version=\"1.0\"?>\n<topology version=\"2.0\"");
        LogCapture log;
        QuietStderr quiet;
        EXPECT_EQ(mxh_xml_read_checked(f.path().c_str(), "hwloc XML", "topology", MXH_XML_HWLOC, &text, &len),
                  MXH_ERR_PARSE);
        EXPECT_EQ(text, nullptr);
        ASSERT_EQ(log.errors().size(), 1u);
        EXPECT_EQ(log.errors()[0], f.path() + ":2: malformed hwloc XML: end of file inside the "
                                              "start tag of <topology> (no '>')");
    }
    {
        LogCapture log;
        QuietStderr quiet;
        EXPECT_EQ(mxh_xml_check(nullptr, 0, nullptr, "topology"), MXH_ERR_PARSE);
        EXPECT_EQ(log.errors()[0], "<XML>:1: no root element (empty document)");
        EXPECT_EQ(mxh_xml_check(nullptr, 1, "x", "topology"), MXH_ERR_INVALID_PARAM);
        EXPECT_EQ(mxh_xml_read_checked(nullptr, "x", "y", 0, &text, &len), MXH_ERR_INVALID_PARAM);
    }
}
