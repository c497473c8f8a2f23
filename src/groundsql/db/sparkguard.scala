// The wall inside the Spark Thrift server that `groundsql spark serve` starts (db/sparkserver.py).
//
// Spark has no read-only mode and no accounts, and its Thrift port answers anyone who can reach
// it. groundsql's validator and engine refuse anything but a query before it is sent; this file
// is what holds when they do not (a bug, or a local process that talks to the port itself):
//
// - `Server.main` registers the copies' tables, then seals the guard and starts the Thrift
//   server on the same Spark session. After the seal no statement can change the catalog.
// - `PasswordCheck`: the port takes only the password `serve` generated (its SHA-256 is all the
//   server holds).
// - `GuardedParser` sees each statement's text before Spark substitutes ${...} variables into it
//   and refuses any `${`; it refuses every statement that is not a query, but the few catalog
//   reads and setting reads groundsql's engine sends.
// - `Guard.checkAnalyzed` (a check rule): the session's narrowing settings as sealed (a session
//   that changed one, by SET or by its opening configuration, runs nothing); every table read is
//   one of the served copies (no files, no range(), no other source); no hidden file-metadata
//   column or input_file_*() function.
// - `Guard.checkCost` (as planning begins, on the optimized plan: predicates pushed into joins,
//   subqueries made joins): a join that compares no keys, or collect_list/collect_set and their
//   kin, refused before it runs when its estimated size passes the server's limits.
// - `Watchdog` (a listener): any job running past the server's time limit is cancelled, whatever
//   job group it runs in, so a query groundsql gave up on cannot go on holding the cores.
//
// Compiled by `serve` with the Scala compiler Spark ships (a JRE is enough) and cached by its hash.

package groundsql.spark

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}
import java.security.MessageDigest
import java.util.concurrent.{ConcurrentHashMap, Executors, ThreadFactory, TimeUnit}
import javax.security.sasl.AuthenticationException

import org.apache.hive.service.auth.PasswdAuthenticationProvider
import org.apache.spark.SparkContext
import org.apache.spark.scheduler.{SparkListener, SparkListenerJobEnd, SparkListenerJobStart}
import org.apache.spark.sql.{SparkSession, SparkSessionExtensions}
import org.apache.spark.sql.catalyst.{FunctionIdentifier, TableIdentifier}
import org.apache.spark.sql.catalyst.analysis.UnresolvedTableValuedFunction
import org.apache.spark.sql.catalyst.expressions.{ArrayRepeat, Attribute, Cast, CurrentRow, Expression, FormatString,
  InputFileBlockLength, InputFileBlockStart, InputFileName, IntegerLiteral, Literal, RowFrame, Sequence, SpecifiedWindowFrame,
  StringLPad, StringRPad, StringRepeat, StringSpace, WindowExpression, WindowSpecDefinition}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, Collect, Mode, PercentileBase}
import org.apache.spark.sql.catalyst.parser.{ParameterContext, ParserInterface, SqlStatementSplitResult}
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans.{LeftAnti, LeftSemi}
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.util.MetadataColumnHelper
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.command.SetCommand
import org.apache.spark.sql.execution.datasources.LogicalRelation
import org.apache.spark.sql.hive.thriftserver.HiveThriftServer2
import org.apache.spark.sql.types.StructType

/** A statement the guard refuses; its message is the sentence the client sees. */
final class GuardException(message: String) extends Exception(message)

object Guard {
  // Commands groundsql's engine sends: the catalog reads of introspection (and of the tests'
  // fingerprint: databases and functions), USE (the Thrift client's database), and reading
  // (never assigning) a narrowing setting.
  private val allowedCommands = Set(
    "ShowTables", "ShowTablesCommand", "DescribeRelation", "DescribeTableCommand", "ShowTableProperties",
    "ShowTablePropertiesCommand", "ShowNamespaces", "ShowNamespacesCommand", "ShowFunctions", "ShowFunctionsCommand",
    "SetCatalogAndNamespace", "SetNamespaceCommand", "SetCommand")

  @volatile private var sealedSettings: Option[Map[String, String]] = None
  @volatile private var passwordSha256: Array[Byte] = Array.emptyByteArray
  @volatile private var maxJoinPairs: BigInt = BigInt(1000000000L)
  @volatile private var maxCollectValues: BigInt = BigInt(2000000L)
  // What one value may grow to: a string or array made by repeat/space/lpad/rpad/printf/
  // array_repeat/sequence, nested ones multiplied; repeat's count alone is held lower, since
  // it multiplies a value of any length.
  private val maxValueSize = BigInt(1000000L)
  private val maxRepeat = BigInt(1000L)
  private val formatWidth = "%[-#+ 0,(<]*(\\d+)?(?:\\.(\\d+))?".r

  /** From now on every statement is checked; `guarded` settings keep the values they have now. */
  def seal(spark: SparkSession): Unit = {
    val conf = spark.sparkContext.getConf
    val guarded = conf.get("spark.groundsql.guarded", "").split(",").map(_.trim).filter(_.nonEmpty)
    maxJoinPairs = BigInt(conf.get("spark.groundsql.maxJoinPairs", "1000000000"))
    maxCollectValues = BigInt(conf.get("spark.groundsql.maxCollectValues", "2000000"))
    sealedSettings = Some(guarded.map(key => key -> spark.conf.get(key, "<undefined>")).toMap)
  }

  def setPassword(sha256Hex: String): Unit =
    passwordSha256 = sha256Hex.grouped(2).map(Integer.parseInt(_, 16).toByte).toArray

  def passwordMatches(password: String): Boolean = passwordSha256.nonEmpty && MessageDigest.isEqual(
    MessageDigest.getInstance("SHA-256").digest(Option(password).getOrElse("").getBytes(UTF_8)), passwordSha256)

  private def refuse(why: String): Nothing = throw new GuardException(why)

  private def n(count: BigInt): String = "%,d".format(count.bigInteger)

  private def checkSettings(session: SparkSession): Unit = sealedSettings.foreach { sealedValues =>
    sealedValues.foreach { case (key, value) =>
      val now = session.conf.get(key, "<undefined>")
      if (now != value) refuse(s"this session changed $key (to $now; the server requires $value): it runs nothing")
    }
  }

  /** A statement's text, before Spark's parser substitutes variables into it. */
  def checkText(session: SparkSession, text: String): Unit = if (sealedSettings.isDefined) {
    checkSettings(session)
    if (text.contains("${")) refuse("${...} variable substitution is not allowed on this server")
  }

  /** A parsed statement: a query, or one of the catalog and setting reads groundsql sends. */
  def checkStatement(plan: LogicalPlan): Unit = if (sealedSettings.isDefined) {
    plan match {
      case SetCommand(Some((key, None))) if sealedSettings.exists(_.contains(key)) => return
      case SetCommand(Some((key, None))) => refuse(s"only the server's narrowing settings may be read here, not $key")
      case d: DescribeRelation if d.isExtended => refuse("DESCRIBE ... EXTENDED is not allowed on this server: it shows file paths")
      case SetCommand(_) => refuse("SET is not allowed on this server: its settings are fixed")
      case p if allowedCommands(p.getClass.getSimpleName) => return
      case _ =>
    }
    plan.foreachWithSubqueries {
      case _: Command | _: ParsedStatement | _: CompoundPlanStatement | _: InsertIntoDir =>
        refuse(s"only a query may run on this server, not ${statementName(plan)}")
      case _: ScriptTransformation => refuse("TRANSFORM scripts are not allowed on this server")
      // BROADCAST(a big table) gathers it in the driver's memory; REPARTITION(1000000) floods the scheduler.
      case _: UnresolvedHint => refuse("optimizer hints are not allowed on this server")
      case f: UnresolvedTableValuedFunction =>
        refuse(s"only tables may be read on this server, not the function ${f.name.mkString(".")}()")
      case _ =>
    }
  }

  private def statementName(plan: LogicalPlan): String =
    plan.getClass.getSimpleName.replaceAll("(Command|Statement|Exec)$", "").replaceAll("([a-z])([A-Z])", "$1 $2").toUpperCase

  /** An analyzed plan: settings as sealed, only the served tables read, no file metadata. */
  def checkAnalyzed(session: SparkSession, plan: LogicalPlan): Unit = if (sealedSettings.isDefined) {
    checkSettings(session)
    if (allowedCommands(plan.getClass.getSimpleName)) return
    plan.foreachWithSubqueries { node =>
      node match {
        case r: LogicalRelation if r.catalogTable.isDefined =>
          r.output.find(isFileMetadata).foreach(a => refuse(s"the hidden column ${a.name} is not allowed on this server"))
        case _: OneRowRelation | _: LocalRelation | _: CTERelationRef =>
        case _: Command => refuse(s"only a query may run on this server, not ${statementName(node)}")
        case leaf: LeafNode => refuse(s"only the served tables may be read on this server, not ${describe(leaf)}")
        case _ =>
      }
      node.expressions.foreach { expression =>
        expression.foreach {
          case _: InputFileName | _: InputFileBlockStart | _: InputFileBlockLength =>
            refuse("input_file_name() and its kin are not allowed on this server")
          case a: Attribute if isFileMetadata(a) => refuse(s"the hidden column ${a.name} is not allowed on this server")
          case _ =>
        }
        checkSizes(expression, BigInt(1))
      }
    }
  }

  /** The largest number of distinct values among `keys` that are columns of a table read in
   *  `plan` (the copy's manifest counted them; an analysed table's statistics otherwise). */
  private def distinctOf(keys: Seq[Expression], plan: LogicalPlan): Seq[BigInt] = {
    val ids = keys.flatMap(_.references).map(_.exprId).toSet
    plan.collect { case r: LogicalRelation => r }.flatMap { relation =>
      val counted = relation.catalogTable.flatMap(_.properties.get("groundsql.distinct"))
        .map(json => "\"((?:[^\"\\\\]|\\\\.)*)\": (\\d+)".r.findAllMatchIn(json).map(m => m.group(1) -> BigInt(m.group(2))).toMap)
        .getOrElse(Map.empty[String, BigInt])
      val analysed = relation.catalogTable.flatMap(_.stats).map(_.colStats).getOrElse(Map.empty)
      relation.output.filter(a => ids(a.exprId)).flatMap { a =>
        counted.get(a.name).orElse(analysed.get(a.name).flatMap(_.distinctCount))
      }
    }
  }

  /** Functions that allocate their whole value at once, which no time limit interrupts: their
   *  size must be a literal, and the value (times those it is nested in) within the limits.
   *  Checked before the optimizer, whose constant folding would evaluate them. */
  private def checkSizes(e: Expression, factor: BigInt): Unit = e match {
    case StringRepeat(Literal(text, _), times) if text != null =>  // a known size: space(n) is repeat(' ', n)
      within(sizeOf(times, "repeat") * BigInt(text.toString.length max 1) * factor, "repeat")
    case StringRepeat(text, times) =>
      val times_ = sizeOf(times, "repeat")
      if (times_ * factor > maxRepeat) refuse(s"repeat() may repeat a value at most ${n(maxRepeat)} times, nested ones multiplied")
      checkSizes(text, times_ * factor)
    case ArrayRepeat(element, count) =>
      val count_ = sizeOf(count, "array_repeat")
      within(count_ * factor, "array_repeat")
      checkSizes(element, count_ * factor)
    case StringSpace(count) => within(sizeOf(count, "space") * factor, "space")
    case StringLPad(text, length, pad) => within(sizeOf(length, "lpad") * factor, "lpad"); checkSizes(text, factor); checkSizes(pad, factor)
    case StringRPad(text, length, pad) => within(sizeOf(length, "rpad") * factor, "rpad"); checkSizes(text, factor); checkSizes(pad, factor)
    case f: FormatString =>
      f.children.headOption match {
        case Some(Literal(format, _)) if format != null =>
          formatWidth.findAllMatchIn(format.toString).foreach { m =>
            Seq(m.group(1), m.group(2)).filter(_ != null).foreach(w => within(BigInt(w) * factor, "printf"))
          }
        case _ => refuse("printf()/format_string() need a literal format on this server")
      }
      f.children.foreach(checkSizes(_, factor))
    case s: Sequence =>
      (s.start, s.stop) match {
        case (IntegerLiteral(a), IntegerLiteral(b)) => within(BigInt(math.abs(b.toLong - a.toLong)) * factor, "sequence")
        case _ => refuse("sequence() needs literal integer bounds on this server")
      }
    case other => other.children.foreach(checkSizes(_, factor))
  }

  private def sizeOf(e: Expression, function: String): BigInt = e match {
    case IntegerLiteral(value) => BigInt(value)
    case Cast(IntegerLiteral(value), _, _, _) => BigInt(value)
    case Literal(value: java.lang.Long, _) => BigInt(value.longValue)
    case _ => refuse(s"$function() needs a literal size on this server")
  }

  private def within(size: BigInt, function: String): Unit =
    if (size > maxValueSize)
      refuse(s"$function() would make a value of about ${n(size)} elements; this server allows ${n(maxValueSize)}")

  private def isFileMetadata(a: Attribute): Boolean =
    a.isMetadataCol || a.name.equalsIgnoreCase("_metadata")

  private def describe(leaf: LogicalPlan): String = leaf match {
    case r: LogicalRelation => s"a file read (${r.relation.getClass.getSimpleName})"
    case _: Range => "range()"
    case other => other.nodeName
  }

  /** An optimized plan: a join that compares no keys and collected values within the limits. */
  def checkCost(plan: LogicalPlan): Unit = if (sealedSettings.isDefined) {
    plan.foreach {
      case join: Join if ExtractEquiJoinKeys.unapply(join).isEmpty =>
        val (left, right) = (rows(join.left), rows(join.right))
        if (left * right > maxJoinPairs)
          refuse(s"a join compares no keys between about ${n(left)} and ${n(right)} rows (${n(left * right)} pairs; " +
                 s"this server allows ${n(maxJoinPairs)}): join on a key, or filter the rows first")
      case agg: Aggregate if agg.aggregateExpressions.exists(collects) =>
        val values = rows(agg.child)
        if (values > maxCollectValues)
          refuse(s"collecting about ${n(values)} values into arrays passes this server's limit of ${n(maxCollectValues)}")
      case window: Window if window.windowExpressions.exists(collects) =>
        val rowCount = rows(window.child)
        val values = rowCount * window.windowExpressions.flatMap(_.collect { case w: WindowExpression => frameRows(w, rowCount) })
          .maxOption.getOrElse(rowCount)
        if (values > maxCollectValues)
          refuse(s"collecting over a window of about ${n(rowCount)} rows (up to ${n(values)} values) passes this " +
                 s"server's limit of ${n(maxCollectValues)}")
      case _ =>
    }
  }

  // Aggregates that hold every value of their group: arrays, percentiles, the mode.
  private def collects(e: Expression): Boolean = e.exists {
    case AggregateExpression(_: Collect[_] | _: PercentileBase | _: Mode, _, _, _, _) => true
    case _ => false
  }

  /** How many rows a window's frame holds for each row: a bounded ROWS frame its width; any
   *  other frame (a running total, RANGE, the whole partition) up to every row. */
  private def frameRows(w: WindowExpression, n: BigInt): BigInt = w.windowSpec match {
    case WindowSpecDefinition(_, _, SpecifiedWindowFrame(RowFrame, lower, upper)) =>
      (offset(lower), offset(upper)) match {
        case (Some(from), Some(to)) => BigInt(to - from + 1).max(1)
        case _ => n
      }
    case _ => n
  }

  private def offset(boundary: Expression): Option[Long] = boundary match {
    case CurrentRow => Some(0L)
    case IntegerLiteral(value) => Some(value.toLong)
    case _ => None
  }

  /** An estimate of a plan's rows: an upper bound, but for joins on keys, whose rows are the
   *  product of the two sides' over the keys' larger number of distinct values. */
  private def rows(plan: LogicalPlan): BigInt = plan match {
    case r: LogicalRelation =>
      r.catalogTable.flatMap(_.properties.get("groundsql.rows")).map(BigInt(_))
        .orElse(r.catalogTable.flatMap(_.stats).flatMap(_.rowCount))
        .getOrElse(r.computeStats().sizeInBytes / 8)
    case l: LocalRelation => BigInt(l.data.size)
    case _: OneRowRelation => BigInt(1)
    case limit: GlobalLimit => limit.maxRows.map(BigInt(_)).fold(rows(limit.child))(_ min rows(limit.child))
    case limit: LocalLimit => limit.maxRows.map(BigInt(_)).fold(rows(limit.child))(_ min rows(limit.child))
    case agg: Aggregate if agg.groupingExpressions.isEmpty => BigInt(1)
    case join: Join => join.joinType match {
      case LeftSemi | LeftAnti => rows(join.left)
      case _ if ExtractEquiJoinKeys.unapply(join).isDefined =>
        val (left, right) = (rows(join.left), rows(join.right))
        val (leftKeys, rightKeys) = ExtractEquiJoinKeys.unapply(join).map(k => (k._2, k._3)).get
        val distinct = (distinctOf(leftKeys, join.left) ++ distinctOf(rightKeys, join.right)).maxOption
        distinct.filter(_ > 0).fold(left max right)(d => (left * right / d) max (left min right))
      case _ => rows(join.left) * rows(join.right)
    }
    case union: Union => union.children.map(rows).sum
    case expand: Expand => rows(expand.child) * expand.projections.size
    case other if other.children.isEmpty => BigInt(1)
    case other => other.children.map(rows).max
  }
}

/** Every statement's text and parsed plan go through the guard before Spark's own parser is done. */
class GuardedParser(session: SparkSession, delegate: ParserInterface) extends ParserInterface {
  override def parsePlan(sqlText: String): LogicalPlan = {
    Guard.checkText(session, sqlText)
    val plan = delegate.parsePlan(sqlText)
    Guard.checkStatement(plan)
    plan
  }

  override def parsePlanWithParameters(sqlText: String, context: ParameterContext): LogicalPlan = {
    Guard.checkText(session, sqlText)
    val plan = delegate.parsePlanWithParameters(sqlText, context)
    Guard.checkStatement(plan)
    plan
  }

  override def parseQuery(sqlText: String): LogicalPlan = {
    Guard.checkText(session, sqlText)
    delegate.parseQuery(sqlText)
  }

  override def parseExpression(sqlText: String): Expression = delegate.parseExpression(sqlText)
  override def parseTableIdentifier(sqlText: String): TableIdentifier = delegate.parseTableIdentifier(sqlText)
  override def parseFunctionIdentifier(sqlText: String): FunctionIdentifier = delegate.parseFunctionIdentifier(sqlText)
  override def parseMultipartIdentifier(sqlText: String): Seq[String] = delegate.parseMultipartIdentifier(sqlText)
  override def parseRoutineParam(sqlText: String): StructType = delegate.parseRoutineParam(sqlText)
  override def splitStatements(sqlText: String): SqlStatementSplitResult = delegate.splitStatements(sqlText)
  override def parseTableSchema(sqlText: String): StructType = delegate.parseTableSchema(sqlText)
  override def parseDataType(sqlText: String): org.apache.spark.sql.types.DataType = delegate.parseDataType(sqlText)
}

class Extensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    extensions.injectParser((session, delegate) => new GuardedParser(session, delegate))
    extensions.injectCheckRule(session => (plan: LogicalPlan) => Guard.checkAnalyzed(session, plan))
    // A strategy that plans nothing: it sees each optimized plan as planning begins, after
    // subqueries became joins (an EXISTS over a join that compares no keys is a semi join).
    extensions.injectPlannerStrategy(_ => new SparkStrategy {
      override def apply(plan: LogicalPlan): Seq[SparkPlan] = { Guard.checkCost(plan); Nil }
    })
  }
}

/** HiveServer2's CUSTOM authentication: the password `serve` generated, or nothing. */
class PasswordCheck extends PasswdAuthenticationProvider {
  override def Authenticate(user: String, password: String): Unit =
    if (!Guard.passwordMatches(password)) throw new AuthenticationException("wrong password")
}

/** Cancels every job that runs past `limitMs`, whichever query or job group it belongs to. */
class Watchdog(sc: SparkContext, limitMs: Long) extends SparkListener {
  private val started = new ConcurrentHashMap[Integer, java.lang.Long]()
  private val timer = Executors.newSingleThreadScheduledExecutor(new ThreadFactory {
    override def newThread(r: Runnable): Thread = { val t = new Thread(r, "groundsql-watchdog"); t.setDaemon(true); t }
  })
  timer.scheduleWithFixedDelay(() => sweep(), 1, 1, TimeUnit.SECONDS)

  override def onJobStart(event: SparkListenerJobStart): Unit = started.put(event.jobId, System.nanoTime())
  override def onJobEnd(event: SparkListenerJobEnd): Unit = started.remove(event.jobId)

  private def sweep(): Unit = {
    val now = System.nanoTime()
    started.forEach { (job, since) =>
      if (now - since > limitMs * 1000000L) {
        started.remove(job)
        sc.cancelJob(job, s"groundsql: the query ran past the server's limit of ${limitMs / 1000} s")
      }
    }
  }
}

/** Registers the tables (args(0): one statement a line), seals the guard, serves Thrift. */
object Server {
  def main(args: Array[String]): Unit = {
    val spark = SparkSession.builder().withExtensions(new Extensions).getOrCreate()
    val conf = spark.sparkContext.getConf
    Guard.setPassword(conf.get("spark.groundsql.passwordSha256"))
    val statements = new String(Files.readAllBytes(Paths.get(args(0))), UTF_8).split("\n").map(_.trim).filter(_.nonEmpty)
    statements.foreach(spark.sql)
    Guard.seal(spark)
    spark.sparkContext.addSparkListener(new Watchdog(spark.sparkContext, conf.getTimeAsMs("spark.groundsql.jobTimeout", "65s")))
    HiveThriftServer2.startWithSparkSession(spark, true)
  }
}
